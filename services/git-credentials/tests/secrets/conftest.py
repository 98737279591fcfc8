"""Shared by the secrets tests: this directory on the path (for ``secrets_helpers``), and a fresh
event stream for each test that uses the session's nats-server.

Each service test starts with a fresh store, and the outbox relay rightly refuses to start when
the stream already holds events of its service beyond its store; so the stream an earlier test
left is deleted first (as ``tests/conftest.py`` does for the cross-service tests).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
import pytest

from contracts.subjects import EVENT_STREAM

TESTS_DIR = Path(__file__).parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


@pytest.fixture(autouse=True)
async def _fresh_event_stream(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    if "nats_server" not in request.fixturenames:
        yield
        return
    server: Any = request.getfixturevalue("nats_server")
    nc = await nats.connect(server.url)
    try:
        await nc.jetstream().delete_stream(EVENT_STREAM)
    except nats.js.errors.NotFoundError:
        pass
    finally:
        await nc.drain()
    yield
