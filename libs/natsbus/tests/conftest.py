"""Fixtures of the natsbus tests: a connection to the testkit's real nats-server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.aio.client import Client
from nats.js.client import JetStreamContext

from natsbus import connect


@pytest.fixture
async def nc(nats_server: Any) -> AsyncIterator[Client]:
    """A connection made by :func:`natsbus.connect`, drained at the end."""
    client = await connect(nats_server.url, name="natsbus-tests")
    yield client
    if not client.is_closed:
        await client.drain()


@pytest.fixture
def js(nc: Client) -> JetStreamContext:
    """The JetStream context of ``nc``."""
    return nc.jetstream()


@pytest.fixture
def token() -> str:
    """A subject token unique to the test, so tests sharing one server never cross."""
    return f"t{uuid.uuid4().hex[:12]}"
