"""The readiness ping reads ``CLIPYARD_NATS_URL`` as the services do: a comma list of servers."""

from __future__ import annotations

import nats
import pytest
from nats.aio.msg import Msg

from testkit.nats_server import NatsServer
from testkit.procutil import free_port
from testkit.readiness import PingCheck

pytestmark = pytest.mark.integration


async def test_the_ping_check_gets_past_a_dead_first_server(nats_server: NatsServer) -> None:
    nc = await nats.connect(nats_server.url)

    async def answer(msg: Msg) -> None:
        await msg.respond(b"pong")

    await nc.subscribe("testkit.listed.ping", cb=answer)
    await nc.flush()
    dead = f"nats://127.0.0.1:{free_port()}"
    check = PingCheck(
        url=f"{dead} , {nats_server.url}", user=None, password=None, subject="testkit.listed.ping"
    )
    try:
        assert await check()
    finally:
        await check.aclose()
        await nc.drain()
