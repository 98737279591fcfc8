"""connect() with a list of servers: past a dead first entry, and across the list when the server
it is on goes away."""

from __future__ import annotations

import asyncio
import time

import pytest
from nats.aio.msg import Msg

from natsbus import connect
from testkit.nats_server import start_nats_server
from testkit.procutil import free_port

pytestmark = pytest.mark.integration


async def test_a_dead_entry_is_passed_and_a_lost_server_is_replaced_by_another_of_the_list() -> (
    None
):
    first, second = start_nats_server(), start_nats_server()
    try:
        dead = f"nats://127.0.0.1:{free_port()}"
        nc = await connect(f"{dead}, {first.url} ,{second.url}", name="listed", initial_wait=5)
        try:
            assert nc.connected_url is not None
            on, other = (first, second) if nc.connected_url.port == first.port else (second, first)

            async def echo(msg: Msg) -> None:
                await msg.respond(msg.data)

            await nc.subscribe("listed.echo", cb=echo)
            on.stop()
            deadline = time.monotonic() + 15
            while not (nc.is_connected and nc.connected_url.port == other.port):
                assert time.monotonic() < deadline, "never reconnected to the other server"
                await asyncio.sleep(0.05)
            # The subscription came along: the client works on the other server.
            reply = await nc.request("listed.echo", b"still here", timeout=5)
            assert reply.data == b"still here"
        finally:
            await nc.close()
    finally:
        first.stop()
        second.stop()
