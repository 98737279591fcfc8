"""connect(): first-connection retries, reconnecting forever, credentials, connection name."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from nats.aio.msg import Msg

from natsbus import NatsConnectError, connect
from testkit.nats_server import start_nats_server
from testkit.procutil import free_port

pytestmark = pytest.mark.integration


class TcpProxy:
    """A TCP relay to the real server that can be switched off and on (a NATS outage)."""

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self._target_port = target_port
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._relays: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await asyncio.gather(*self._relays, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        task.add_done_callback(self._relays.discard)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target_port)
        self._writers.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers.difference_update((writer, up_writer))


async def test_the_connection_carries_its_name(nats_server: Any) -> None:
    nc = await connect(nats_server.url, name="natsbus-named")
    try:
        url = f"http://127.0.0.1:{nats_server.monitor_port}/connz"
        body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=2).read())
        names = [conn.get("name") for conn in json.loads(body)["connections"]]
        assert "natsbus-named" in names
    finally:
        await nc.close()


async def test_the_first_connection_is_retried_until_the_server_answers(nats_server: Any) -> None:
    proxy = TcpProxy(nats_server.port)

    async def late_start() -> None:
        await asyncio.sleep(0.8)
        await proxy.start()

    starter = asyncio.create_task(late_start())
    started = time.monotonic()
    nc = await connect(
        f"nats://127.0.0.1:{proxy.port}", name="late", initial_wait=5, reconnect_wait=0.2
    )
    try:
        assert time.monotonic() - started >= 0.75
        assert nc.is_connected
        await starter
    finally:
        await nc.close()
        await proxy.stop()


async def test_it_gives_up_after_initial_wait_without_showing_secrets() -> None:
    url = f"nats://svc:hunter2@127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(NatsConnectError) as caught:
        await connect(url, name="nobody", initial_wait=1.0, reconnect_wait=0.2)
    assert 0.9 < time.monotonic() - started < 3.0
    assert "127.0.0.1" in str(caught.value)
    assert "hunter2" not in str(caught.value)


async def test_it_reconnects_after_an_outage(nats_server: Any) -> None:
    proxy = TcpProxy(nats_server.port)
    await proxy.start()
    nc = await connect(f"nats://127.0.0.1:{proxy.port}", name="survivor", reconnect_wait=0.2)
    try:

        async def echo(msg: Msg) -> None:
            await msg.respond(msg.data)

        sub = await nc.subscribe("natsbus.echo", cb=echo)
        await proxy.stop()  # NATS goes away ...
        await asyncio.sleep(1.5)  # ... for longer than a few reconnect attempts
        assert not nc.is_closed
        await proxy.start()  # ... and comes back
        for _ in range(100):
            if nc.is_connected:
                break
            await asyncio.sleep(0.05)
        assert nc.is_connected
        reply = await nc.request("natsbus.echo", b"ping", timeout=2)
        assert reply.data == b"ping"
        await sub.unsubscribe()
    finally:
        await nc.close()
        await proxy.stop()


async def test_user_and_password(tmp_path: Path) -> None:
    config = tmp_path / "auth.conf"
    config.write_text('authorization { users = [ {user: "svc", password: "s3cret-pw"} ] }\n')
    server = await asyncio.to_thread(start_nats_server, config)
    try:
        nc = await connect(server.url, name="authed", user="svc", password="s3cret-pw")
        assert nc.is_connected
        await nc.close()
        with pytest.raises(NatsConnectError) as caught:
            await connect(
                server.url, name="intruder", user="svc", password="wrong-pw", initial_wait=1.0
            )
        assert "wrong-pw" not in str(caught.value)
        assert "uthorization" in str(caught.value)
    finally:
        await asyncio.to_thread(server.stop)
