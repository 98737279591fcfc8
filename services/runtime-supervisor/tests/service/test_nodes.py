"""The worker-node registry's live side against a real nats-server: a registered node whose
supervisor does not answer is ``unreachable`` once the lapse is past, ``ready`` while it answers.
(One supervisor per node is the node lease's: ``libs/servicekit/tests/test_node_lease.py``.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import nats
import pytest

from contracts.nodes import NodeCapacity
from natsbus import BusClient
from runtime_supervisor.domain.nodes import WorkerNode
from runtime_supervisor.orchestration.nodes import LAPSE, NodeDirectory
from runtime_supervisor.settings import SupervisorSettings
from servicekit import ServiceSettings

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


async def test_a_node_that_stops_answering_is_unreachable_after_the_lapse(
    nats_server: Any, tmp_path: Path
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        here = _directory(nc, tmp_path, "nodea", "sup-a")
        now = datetime.now(UTC)
        nodes = [_registered("nodea", now), _registered("nodeb", now)]
        views = {view.id: view for view in await here.views(nodes, {})}
        # Its own node answers; nodeb's supervisor never has (nothing serves its subject).
        assert views["nodea"].state == "ready"
        assert views["nodea"].parts == ["supervisor"]
        assert views["nodea"].version == "9.9.9"
        assert (views["nodeb"].state, views["nodeb"].parts) == ("unreachable", [])
        assert views["nodeb"].version == "1.0"  # as it registered
        # Seen a moment ago: still ready within the lapse, unreachable after it.
        here.last_seen["nodeb"] = datetime.now(UTC) - LAPSE + timedelta(seconds=5)
        assert {v.id: v.state for v in await here.views(nodes, {})}["nodeb"] == "ready"
        here.last_seen["nodeb"] = datetime.now(UTC) - LAPSE - timedelta(seconds=1)
        assert {v.id: v.state for v in await here.views(nodes, {})}["nodeb"] == "unreachable"
    finally:
        await nc.drain()


async def test_a_draining_node_shows_draining_while_it_answers_and_ready_once_undrained(
    nats_server: Any, tmp_path: Path
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        here = _directory(nc, tmp_path, "nodea", "sup-a")
        now = datetime.now(UTC)
        drained, silent = _registered("nodea", now), _registered("nodeb", now)
        drained.drain("host maintenance")
        silent.drain(None)
        views = {view.id: view for view in await here.views([drained, silent], {})}
        assert views["nodea"].state == "draining"
        assert views["nodeb"].state == "unreachable"  # a node that does not answer is that
        drained.drain("again")  # already draining: no new event
        assert drained.drain_reason == "host maintenance"
        drained.undrain()
        views = {view.id: view for view in await here.views([drained], {})}
        assert views["nodea"].state == "ready"
        assert [type(e).__name__ for e in drained.collect_events()][-2:] == [
            "DrainStarted",
            "DrainEnded",
        ]
    finally:
        await nc.close()
