"""A service answers ``$SRV.PING`` only once every endpoint its register hook adds is served:
whoever waits for the ping (the test kit, ``./dev up``) never finds it up and its endpoints gone."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
import pytest

from contracts import subjects
from contracts.base import Struct
from eventstore import ServiceApplication
from natsbus import RequestContext
from servicekit import ServiceRuntime, ServiceSettings, ServiceSpec, start_service

pytestmark = pytest.mark.integration

ECHO = "ws.qry.slowpoke.echo"


class Echo(Struct, frozen=True, kw_only=True):
    text: str


class Empty(ServiceApplication):
    """No aggregates: the test is about the start."""


async def _ping(nc: Any) -> bool:
    try:
        await nc.request("$SRV.PING.slowpoke", b"", timeout=1)
    except nats.errors.NoRespondersError:
        return False
    return True


async def test_ping_answers_only_after_the_register_hook_has_added_its_endpoints(
    tmp_path: Path, nats_server: Any
) -> None:
    nc = await nats.connect(nats_server.url)
    with contextlib.suppress(nats.js.errors.NotFoundError):
        await nc.jetstream().delete_stream(subjects.EVENT_STREAM)
    in_register = asyncio.Event()
    go_on = asyncio.Event()

    async def echo(request: Echo, _ctx: RequestContext) -> str:
        return request.text

    async def register(runtime: ServiceRuntime) -> None:
        in_register.set()
        await go_on.wait()  # a slow hook: opening a vault, rebuilding a cache
        await runtime.service.add_endpoint("echo", ECHO, echo, Echo)

    spec = ServiceSpec(
        token="controller",
        name="slowpoke",
        version="0.0.1",
        application_class=Empty,
        to_contract=lambda _event: None,
        register=register,
    )
    settings = ServiceSettings.from_env(
        "slowpoke", {"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_NATS_URL": nats_server.url}
    )
    try:
        async with AsyncExitStack() as stack:
            starting = asyncio.ensure_future(start_service(spec, settings, stack, asyncio.Event()))
            await asyncio.wait_for(in_register.wait(), 30)
            # Mid-start: the micro service exists but does not claim to be up.
            assert not await _ping(nc)
            go_on.set()
            await asyncio.wait_for(starting, 30)
            assert await _ping(nc)
            reply = await nc.request(ECHO, b'{"text": "hi"}', timeout=5)
            assert b"hi" in reply.data
    finally:
        await nc.drain()
