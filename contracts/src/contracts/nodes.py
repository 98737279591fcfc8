"""Worker nodes (owner: runtime-supervisor): the hosts that hold workspaces and their processes.

A worker node is one host's runtime-supervisor and workspace-realizer host part under one
``CLIPYARD_NODE_ID``. Each supervisor registers its node when it starts (the registry is kept in
the supervisor's store) and answers for it on ``ws.qry.node.info.<node>`` while it runs; a node
whose supervisor does not answer now, and has not within 15 s as far as the supervisor giving the
list has seen, is ``unreachable``. ``GET
/api/nodes`` (the admin key) and ``clipyard nodes`` list them (``ws.qry.node.list``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from contracts.base import Query, Struct
from contracts.subjects import query

__all__ = [
    "NODE_INFO_PREFIX",
    "NODE_LIST",
    "GetNodeInfo",
    "ListNodes",
    "NodeCapacity",
    "NodeInfo",
    "NodeState",
    "NodeView",
    "node_info",
]

NodeState = Literal["ready", "draining", "unreachable"]

NODE_LIST: Final = query("node", "list")
"""``ws.qry.node.list``: every registered node with its state (any supervisor answers)."""
NODE_INFO_PREFIX: Final = query("node", "info")


def node_info(node: str) -> str:
    """``ws.qry.node.info.<node>``: answered by that node's own supervisor only."""
    return f"{NODE_INFO_PREFIX}.{node}"


class NodeCapacity(Struct, frozen=True, kw_only=True):
    """What a node can hold, as its supervisor measured it."""

    slots: int
    """Adapter slots of the local pool (``CLIPYARD_SLOTS``)."""
    port_range: str
    """``CLIPYARD_PORT_RANGE`` of its runtime services (``41000-41999``)."""
    disk_free_bytes: int
    """Free bytes under its ``CLIPYARD_HOME``."""
    cpus: int
    memory_bytes: int
    """The host's memory (``MemTotal``; 0 when it cannot be read)."""


class NodeInfo(Struct, frozen=True, kw_only=True):
    """A node as its own supervisor tells it now."""

    id: str
    instance: str
    """The supervisor's ``CLIPYARD_INSTANCE_ID``."""
    version: str
    started_at: datetime
    capacity: NodeCapacity


class NodeView(Struct, frozen=True, kw_only=True):
    """A registered node, as ``GET /api/nodes`` shows it."""

    id: str
    state: NodeState
    instance: str
    """The supervisor that registered it last (or answers for it now)."""
    version: str
    started_at: datetime
    last_seen_at: datetime | None
    """When its supervisor last answered (None: not since the answering supervisor started)."""
    capacity: NodeCapacity
    parts: list[str]
    """Which of its processes answer now: ``supervisor``, ``realizer`` (its host part)."""
    workspaces: int = 0
    """The open execution workspaces and project workspaces placed on it (its load for the
    placement of new ones)."""


class ListNodes(Query, tag="node.list.v1", frozen=True, kw_only=True):
    """Every registered node (the admin key, or Clipyard placing a workspace)."""

    parts: bool = True
    """Ask which realizer host parts answer (a ping of about 0.3 s); False: ``parts`` names the
    supervisor only."""


class GetNodeInfo(Query, tag="node.info.v1", frozen=True, kw_only=True):
    """A node's own account of itself (a supervisor asks another)."""
