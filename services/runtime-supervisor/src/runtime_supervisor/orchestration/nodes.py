"""The worker-node registry's live side (docs/scale-out.md, "Worker nodes"): what this node can
hold, a second supervisor claiming this node refused at start, and every registered node's state
as the supervisors see it now.

A node is ``ready`` while its supervisor answers ``ws.qry.node.info.<node>`` (asked when the list
is asked, about a second at most), or answered within :data:`LAPSE` (15 s) as far as the
supervisor answering the list has seen (no heartbeat is stored: another supervisor, or one just
restarted, may not have seen it); else ``unreachable``. Its ``parts`` say which of its processes
answer: ``supervisor``, and ``realizer`` when a workspace-realizer serving the host part (``part``
metadata ``host`` or ``both``) names the node in its ping.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from contracts.base import Actor, Ok, Principal
from contracts.nodes import GetNodeInfo, NodeCapacity, NodeInfo, NodeView, node_info
from natsbus.instances import ping_instances
from servicekit.node_lease import hold_node_lease, node_lease

if TYPE_CHECKING:
    from runtime_supervisor.domain.nodes import WorkerNode
    from runtime_supervisor.settings import SupervisorSettings
    from servicekit import ServiceRuntime

__all__ = [
    "LAPSE",
    "DuplicateNodeError",
    "NodeDirectory",
    "hold_node",
    "measure_capacity",
]

LAPSE: Final = timedelta(seconds=15)
"""How long a node that stopped answering still counts as ``ready``."""
ASK_TIMEOUT: Final = 1.0
"""Seconds to wait for a node's own answer."""
SUPERVISOR: Final = "runtime-supervisor"
REALIZER: Final = "workspace-realizer"


class DuplicateNodeError(RuntimeError):
    """Another live supervisor already serves this node id."""


async def hold_node(runtime: ServiceRuntime) -> None:
    """Hold this node's lease, ``node:<node>`` in the supervisor's store, before anything of
    the node is touched (:mod:`servicekit.node_lease`): one supervisor per node.

    Raises:
        DuplicateNodeError: A live supervisor of another instance holds it, naming it.
    """
    node = runtime.settings.node_id

    def refused(holder: str) -> Exception:
        return DuplicateNodeError(
            f"node {node} is already served by runtime-supervisor {holder}, which is running: "
            "one supervisor per node. Give this host its own CLIPYARD_NODE_ID, or stop the "
            "other first."
        )

    await hold_node_lease(node_lease(runtime, f"node:{node}"), refused)


def measure_capacity(settings: SupervisorSettings, home: Path) -> NodeCapacity:
    """What this host can hold now."""
    low, high = settings.port_range
    try:
        free = shutil.disk_usage(home).free
    except OSError:
        free = 0
    return NodeCapacity(
        slots=settings.slots,
        port_range=f"{low}-{high}",
        disk_free_bytes=free,
        cpus=os.cpu_count() or 1,
        memory_bytes=_memory_bytes(),
    )


def _memory_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class NodeDirectory:
    """This supervisor's view of the worker nodes."""

    def __init__(self, runtime: ServiceRuntime, settings: SupervisorSettings, version: str) -> None:
        self.runtime = runtime
        self.settings = settings
        self.node = runtime.settings.node_id
        self.instance = runtime.settings.instance_id
        self.version = version
        self.started_at = datetime.now(UTC)
        self.last_seen: dict[str, datetime] = {}
        self._system = Principal(company_id=None, actor=Actor(type="system", id=SUPERVISOR))

    def own_info(self) -> NodeInfo:
        """This node as its supervisor tells it now."""
        return NodeInfo(
            id=self.node,
            instance=self.instance,
            version=self.version,
            started_at=self.started_at,
            capacity=measure_capacity(self.settings, self.runtime.settings.home),
        )

    async def views(
        self, nodes: list[WorkerNode], placed: dict[str, int], *, parts: bool = True
    ) -> list[NodeView]:
        """Every registered node's state now, by id, with what is placed on it; ``parts``:
        ping the realizers for their host parts too."""
        asks = asyncio.gather(*(self._ask(node.node_id) for node in nodes))
        answers, realizers = await asyncio.gather(asks, self._host_parts() if parts else _nothing())
        now = datetime.now(UTC)
        views = []
        for node, answer in zip(nodes, answers, strict=True):
            if answer is not None:
                self.last_seen[node.node_id] = now
            seen = self.last_seen.get(node.node_id)
            ready = answer is not None or (seen is not None and now - seen < LAPSE)
            answered = (["supervisor"] if answer is not None else []) + (
                ["realizer"] if node.node_id in realizers else []
            )
            state = ("draining" if node.draining else "ready") if ready else "unreachable"
            view = _view(node, answer, seen, state, answered)
            views.append(msgspec.structs.replace(view, workspaces=placed.get(node.node_id, 0)))
        return sorted(views, key=lambda view: view.id)

    async def _ask(self, node: str) -> NodeInfo | None:
        if node == self.node:
            return self.own_info()
        try:
            reply = await self.runtime.bus.request(
                node_info(node), GetNodeInfo(principal=self._system), timeout=ASK_TIMEOUT
            )
        except Exception:  # no answer in time, or the bus is down: it tells nothing now
            return None
        if not isinstance(reply, Ok):
            return None
        return msgspec.convert(reply.result, NodeInfo)

    async def _host_parts(self) -> set[str]:
        """The nodes whose realizer host part answers a ping now."""
        try:
            pings = await ping_instances(self.runtime.nc, REALIZER, wait=0.3)
        except Exception:
            return set()
        return {
            ping.metadata.get("node", "")
            for ping in pings
            if ping.metadata.get("part", "both") in ("both", "host")
        }


async def _nothing() -> set[str]:
    return set()


def _view(
    node: WorkerNode, answer: NodeInfo | None, seen: datetime | None, state: str, parts: list[str]
) -> NodeView:
    if answer is not None:
        return NodeView(
            id=node.node_id,
            state=state,  # type: ignore[arg-type]
            instance=answer.instance,
            version=answer.version,
            started_at=answer.started_at,
            last_seen_at=seen,
            capacity=answer.capacity,
            parts=parts,
        )
    return NodeView(
        id=node.node_id,
        state=state,  # type: ignore[arg-type]
        instance=node.instance,
        version=node.release,
        started_at=node.started_at or datetime.fromtimestamp(0, UTC),
        last_seen_at=seen,
        capacity=msgspec.convert(node.capacity, NodeCapacity),
        parts=parts,
    )
