"""Fixtures of the event-store tests: the sample apps' module on the path, a fresh event stream."""

from __future__ import annotations

import asyncio
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
    """A JetStream context on a fresh, empty ``WS_EVENTS`` (deleted and created again).

    The new stream is checked to be empty: a full run once saw one that, created right after its
    deletion, still held the previous test's ten messages. It is deleted again (three tries at
    most) rather than handed to a test that would take those messages for its own.
    """
    nc = await nats.connect(nats_server.url)
    context = nc.jetstream()
    for attempt in range(3):
        with contextlib.suppress(nats.js.errors.NotFoundError):
            await context.delete_stream(EVENT_STREAM)
        info = await ensure_event_stream(context)
        if info.state.messages == 0:
            break
        await asyncio.sleep(0.2 * (attempt + 1))
    else:
        await nc.close()
        pytest.fail(f"{EVENT_STREAM} still holds {info.state.messages} messages after 3 deletions")
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
