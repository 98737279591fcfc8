"""Route tables over a real bus: each method answers its subject; names stay unique."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from contracts.base import Struct
from natsbus import BusClient, BusService, RequestContext
from servicekit.routes import BusEndpoints, Route, mount

pytestmark = pytest.mark.integration


class Shout(Struct, frozen=True, kw_only=True):
    text: str


class Echoed(Struct, frozen=True, kw_only=True):
    text: str
    by: str


class Echoes(BusEndpoints):
    """Two handlers of one aggregate; the second allows one request at a time."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def echo(self, request: Shout, ctx: RequestContext) -> Echoed:
        return Echoed(text=request.text, by="echo")

    async def upper(self, request: Shout, ctx: RequestContext) -> Echoed:
        return Echoed(text=request.text.upper(), by="upper")

    def routes(self) -> Sequence[Route]:
        return (
            Route("echo", f"{self.prefix}.echo", self.echo, Shout),
            Route("upper", f"{self.prefix}.upper", self.upper, Shout, concurrency=1),
        )


@pytest.fixture
async def nc(nats_server: Any) -> AsyncIterator[Client]:
    client = await nats.connect(nats_server.url)
    yield client
    await client.drain()


async def test_each_route_answers_its_subject_with_its_method(nc: Client) -> None:
    prefix = f"ws.qry.t{uuid.uuid4().hex[:8]}"
    service = await BusService.start(nc, name="echoes", version="1.0.0", description="tests")
    try:
        await mount(service, Echoes(prefix))
        client = BusClient(nc)
        plain = await client.call(f"{prefix}.echo", Shout(text="hi"), Echoed, timeout=5)
        loud = await client.call(f"{prefix}.upper", Shout(text="hi"), Echoed, timeout=5)
        assert (plain.text, plain.by) == ("hi", "echo")
        assert (loud.text, loud.by) == ("HI", "upper")
    finally:
        await service.stop()


async def test_a_name_used_twice_is_refused_naming_it(nc: Client) -> None:
    prefix = f"ws.qry.t{uuid.uuid4().hex[:8]}"
    service = await BusService.start(nc, name="echoes", version="1.0.0", description="tests")
    try:
        with pytest.raises(ValueError, match="'echo' already exists"):
            await mount(service, Echoes(prefix), Echoes(prefix + "x"))
    finally:
        await service.stop()
