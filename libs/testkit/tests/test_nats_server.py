"""The nats_server fixture is a real nats-server with JetStream; start_nats_server takes configs."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.js.api import StorageType

from testkit.nats_server import NatsServer, start_nats_server

pytestmark = pytest.mark.integration


async def test_jetstream_stores_and_acks(nats_server: NatsServer) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="TESTKIT_JS", subjects=["testkit.js.>"], storage=StorageType.FILE)
        ack = await js.publish("testkit.js.one", b"hello", headers={"Nats-Msg-Id": "m-1"})
        duplicate = await js.publish("testkit.js.one", b"hello", headers={"Nats-Msg-Id": "m-1"})
        message = await js.get_msg("TESTKIT_JS", ack.seq)
        await js.delete_stream("TESTKIT_JS")
    finally:
        await nc.close()
    assert ack.stream == "TESTKIT_JS"
    assert ack.seq >= 1
    assert duplicate.duplicate
    assert message.data == b"hello"


def test_server_exposes_port_monitor_and_store(nats_server: NatsServer) -> None:
    assert nats_server.url == f"nats://{nats_server.host}:{nats_server.port}"
    assert nats_server.monitor_url is not None
    with urllib.request.urlopen(f"{nats_server.monitor_url}/varz", timeout=2) as response:
        varz = json.load(response)
    assert varz["port"] == nats_server.port
    assert varz["jetstream"]["config"]["store_dir"].startswith(str(nats_server.store_dir))
    major, minor = (int(part) for part in varz["version"].split(".")[:2])
    assert (major, minor) >= (2, 10), varz["version"]


async def test_a_config_file_brings_users_and_env_variables(tmp_path: Path) -> None:
    config = tmp_path / "users.conf"
    config.write_text(
        'authorization { users = [ { user: "realizer", password: $REALIZER_PASSWORD } ] }\n'
    )
    server = start_nats_server(config, env={"REALIZER_PASSWORD": "s3cret"})
    try:
        anonymous = NATS()
        with pytest.raises(NatsError, match=r"[Aa]uthorization"):
            await anonymous.connect(server.url, allow_reconnect=False, connect_timeout=1)
        await anonymous.close()  # nats-py leaves the failed transport open otherwise
        nc = await nats.connect(
            server.url, user="realizer", password="s3cret", allow_reconnect=False
        )
        await nc.close()
    finally:
        server.stop()
    assert server.store_dir is not None
    assert not server.store_dir.exists()


async def test_restart_keeps_port_and_jetstream_data(tmp_path: Path) -> None:
    server = start_nats_server(store_dir=tmp_path / "js")
    try:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="KEEP", subjects=["keep.>"], storage=StorageType.FILE)
        await js.publish("keep.a", b"1")
        await nc.close()
        pid = server.pid
        server.restart()
        assert server.pid != pid
        nc = await nats.connect(server.url)
        info = await nc.jetstream().stream_info("KEEP")
        await nc.close()
    finally:
        server.stop()
    assert info.state.messages == 1
    assert (tmp_path / "js").exists(), "a store_dir given by the caller is left in place"
