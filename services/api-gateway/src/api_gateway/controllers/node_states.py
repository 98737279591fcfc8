"""Which worker nodes do not answer now, for list rows (docs/scale-out.md, "Worker nodes").

A list of execution workspaces is read from the store: its rows say nothing of their node's
health. The gateway asks the node registry (``ws.qry.node.list`` without the realizer ping, at
most :data:`ASK_TIMEOUT`) and marks the rows of the nodes that are ``unreachable``. When the
registry does not answer in that time, the rows are shown as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

import msgspec

from api_gateway.http.dependencies import Gateway
from contracts.base import Actor, Ok, Principal
from contracts.execution_views import ExecutionWorkspaceRow
from contracts.nodes import NODE_LIST, ListNodes, NodeView

__all__ = ["ASK_TIMEOUT", "mark_unreachable", "unreachable_nodes"]

log = logging.getLogger(__name__)

ASK_TIMEOUT: Final = 0.5
"""Seconds a list waits for the registry before it answers without node states."""
_SYSTEM: Final = Principal(company_id=None, actor=Actor(type="system", id="api-gateway"))


async def unreachable_nodes(gateway: Gateway) -> frozenset[str]:
    """The registered nodes that do not answer now (none when the registry does not answer)."""
    try:
        reply = await gateway.bus.request(
            NODE_LIST, ListNodes(principal=_SYSTEM, parts=False), timeout=ASK_TIMEOUT
        )
        if not isinstance(reply, Ok):
            return frozenset()
        nodes = msgspec.convert(reply.result, list[NodeView])
    except Exception as exc:  # a list is still worth showing without its nodes' states
        log.info("node states not read for a list: %s", exc)
        return frozenset()
    return frozenset(node.id for node in nodes if node.state == "unreachable")


async def mark_unreachable(
    gateway: Gateway, rows: Sequence[ExecutionWorkspaceRow]
) -> list[ExecutionWorkspaceRow]:
    """``rows`` with ``nodeState`` ``unreachable`` on those whose node does not answer."""
    if not rows:
        return list(rows)
    down = await unreachable_nodes(gateway)
    return [
        msgspec.structs.replace(row, node_state="unreachable") if row.node_id in down else row
        for row in rows
    ]
