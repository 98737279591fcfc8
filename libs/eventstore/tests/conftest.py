"""Fixtures of the event-store tests: the sample apps' module on the path, a fresh event stream."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import nats
import nats.js.errors
import pytest

from contracts.subjects import EVENT_STREAM
from eventstore import StoreExecutor
from natsbus.jetstream import ensure_event_stream

if TYPE_CHECKING:
    from nats.js.client import JetStreamContext

    from testkit.nats_server import NatsServer

TESTS_DIR = Path(__file__).parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


@pytest.fixture
async def js(nats_server: NatsServer) -> AsyncIterator[JetStreamContext]:
    """A JetStream context on a fresh, empty ``WS_EVENTS`` (deleted and created again)."""
    nc = await nats.connect(nats_server.url)
    context = nc.jetstream()
    with contextlib.suppress(nats.js.errors.NotFoundError):
        await context.delete_stream(EVENT_STREAM)
    await ensure_event_stream(context)
    try:
        yield context
    finally:
        await nc.close()


@pytest.fixture
def executor() -> Iterator[StoreExecutor]:
    """A store thread, closed after the test."""
    store_thread = StoreExecutor(name="test-store")
    try:
        yield store_thread
    finally:
        store_thread.close()
