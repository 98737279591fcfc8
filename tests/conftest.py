"""Cross-process tests share one nats-server per session; each test starts with no event stream.

Each test builds fresh stores, and a service's outbox relay rightly refuses to start when the
stream already holds events of its service beyond its store (a store wiped under a live stream).
So the stream left by an earlier test is deleted before the next one that uses NATS.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import nats
import nats.js.errors
import pytest

from contracts.subjects import EVENT_STREAM


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
