"""The nats_cluster fixture: three real clustered nats-servers that take R3 streams at once."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.request
import uuid

import nats
import nats.errors
import nats.js.errors
import pytest
from nats.js.api import StreamConfig

from testkit.nats_cluster import NatsCluster

pytestmark = pytest.mark.integration


def test_every_node_is_listed_and_a_meta_leader_is_elected(nats_cluster: NatsCluster) -> None:
    assert len(nats_cluster.urls) == 3
    assert nats_cluster.url == ",".join(nats_cluster.urls)
    assert nats_cluster.meta_leader() in {"n0", "n1", "n2"}
    for node in nats_cluster.nodes:
        with urllib.request.urlopen(f"{node.monitor_url}/varz", timeout=2) as response:
            varz = json.load(response)
        assert varz["server_name"] == node.name
        assert varz["cluster"]["name"] == nats_cluster.name
        assert varz["jetstream"]["config"]["store_dir"].startswith(str(node.store_dir))
    # Ready in seconds: the nodes start together (the suite's budget counts on it).
    assert nats_cluster.ready_after < 10.0


async def test_an_r3_stream_is_created_at_once_and_keeps_writing_with_a_node_down(
    nats_cluster: NatsCluster,
) -> None:
    name = f"TESTKIT_R3_{uuid.uuid4().hex[:8].upper()}"
    nc = await nats.connect(nats_cluster.urls, max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    try:
        js = nc.jetstream()
        info = await js.add_stream(StreamConfig(name=name, subjects=[f"{name}.>"], num_replicas=3))
        assert info.config.num_replicas == 3
        assert info.cluster is not None
        assert info.cluster.name == nats_cluster.name
        await js.publish(f"{name}.one", b"1")
        # One node crashes: the other two still hold a quorum and take writes.
        connected = nc.connected_url.port if nc.connected_url else None
        stopped = 2 if nats_cluster.nodes[0].port == connected else 0  # not the one we talk to
        nats_cluster.stop_node(stopped, signal.SIGKILL)
        # When it led the stream, the other two elect a leader first (no responder meanwhile).
        deadline = time.monotonic() + 15
        while True:
            try:
                await js.publish(f"{name}.two", b"2", timeout=2)
                break
            except (nats.js.errors.NoStreamResponseError, nats.errors.TimeoutError):
                assert time.monotonic() < deadline, "the stream took no write with a node down"
                await asyncio.sleep(0.1)
        nats_cluster.start_node(stopped)
        assert nats_cluster.healthy(stopped)
        assert (await js.stream_info(name)).state.messages == 2
        await js.delete_stream(name)
    finally:
        await nc.close()
