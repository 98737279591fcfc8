"""The worker-node registry's live side against a real nats-server: a supervisor refuses to start
on a node another live supervisor serves (naming it), and a registered node whose supervisor does
not answer is ``unreachable`` once the heartbeat lapse is past, ``ready`` while it answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import nats
import pytest

from contracts.nodes import NodeCapacity
from natsbus import BusClient, BusService
from natsbus.instances import INSTANCE_METADATA
from runtime_supervisor.domain.nodes import WorkerNode
from runtime_supervisor.orchestration.nodes import LAPSE, DuplicateNodeError, NodeDirectory
from runtime_supervisor.settings import SupervisorSettings
from servicekit import ServiceSettings
from servicekit.instances import InstanceDirectory

pytestmark = pytest.mark.integration


def _directory(nc: Any, tmp_path: Path, node: str, instance: str) -> NodeDirectory:
    settings = SimpleNamespace(node_id=node, instance_id=instance, home=tmp_path)
    runtime = SimpleNamespace(nc=nc, bus=BusClient(nc), settings=settings)
    supervisor = SupervisorSettings(service=ServiceSettings.from_env("runtime-supervisor", {}))
    return NodeDirectory(runtime, supervisor, "9.9.9")  # type: ignore[arg-type]


def _registered(node: str, at: datetime) -> WorkerNode:
    record = WorkerNode(node_id=node)
    capacity = NodeCapacity(
        slots=2, port_range="41000-41999", disk_free_bytes=1, cpus=1, memory_bytes=1
    )
    record.start(
        instance=f"sup-{node}", release="1.0", at=at, capacity=msgspec.to_builtins(capacity)
    )
    return record


async def test_a_second_supervisor_of_a_live_node_is_refused(
    nats_server: Any, tmp_path: Path
) -> None:
    nc = await nats.connect(nats_server.url)
    other = await BusService.start(
        nc,
        name="runtime-supervisor",
        version="1.0.0",
        description="another host's supervisor",
        metadata={INSTANCE_METADATA: "sup-a", "node": "nodea"},
    )
    try:
        # What a starting supervisor's instance directory found at start.
        peers = InstanceDirectory(nc, "runtime-supervisor", own="sup-b")
        await peers.refuse_duplicate("sup-b")
        _directory(nc, tmp_path, "nodeb", "sup-b").refuse_duplicate(peers.at_start)  # fine
        with pytest.raises(DuplicateNodeError, match="already served by runtime-supervisor sup-a"):
            _directory(nc, tmp_path, "nodea", "sup-a2").refuse_duplicate(peers.at_start)
        # The same instance starting again (its old process gone) is not a duplicate.
        _directory(nc, tmp_path, "nodea", "sup-a").refuse_duplicate(peers.at_start)
    finally:
        await other.stop()
        await nc.drain()


async def test_a_node_that_stops_answering_is_unreachable_after_the_lapse(
    nats_server: Any, tmp_path: Path
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        here = _directory(nc, tmp_path, "nodea", "sup-a")
        now = datetime.now(UTC)
        nodes = [_registered("nodea", now), _registered("nodeb", now)]
        views = {view.id: view for view in await here.views(nodes)}
        # Its own node answers; nodeb's supervisor never has (nothing serves its subject).
        assert views["nodea"].state == "ready"
        assert views["nodea"].parts == ["supervisor"]
        assert views["nodea"].version == "9.9.9"
        assert (views["nodeb"].state, views["nodeb"].parts) == ("unreachable", [])
        assert views["nodeb"].version == "1.0"  # as it registered
        # Seen a moment ago: still ready within the lapse, unreachable after it.
        here.last_seen["nodeb"] = datetime.now(UTC) - LAPSE + timedelta(seconds=5)
        assert {v.id: v.state for v in await here.views(nodes)}["nodeb"] == "ready"
        here.last_seen["nodeb"] = datetime.now(UTC) - LAPSE - timedelta(seconds=1)
        assert {v.id: v.state for v in await here.views(nodes)}["nodeb"] == "unreachable"
    finally:
        await nc.drain()
