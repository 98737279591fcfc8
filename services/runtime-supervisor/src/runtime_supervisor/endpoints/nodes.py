"""Endpoints of the worker-node registry: the list (``ws.qry.node.list``, any supervisor; the
admin key, ARCHITECTURE §5.1) and this node's own account (``ws.qry.node.info.<node>``, asked by
the other supervisors)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from contracts.drains import NODE_MARK_DRAINING, NODE_UNDRAIN, MarkNodeDraining, UndrainNode
from contracts.nodes import NODE_LIST, GetNodeInfo, ListNodes, NodeInfo, NodeView, node_info
from runtime_supervisor.endpoints.common import SupervisorEndpoints
from servicekit.access import Access, Action, Resource
from servicekit.routes import Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from natsbus import RequestContext
    from runtime_supervisor.orchestration.context import Supervisor
    from runtime_supervisor.orchestration.nodes import NodeDirectory
    from servicekit import ServiceRuntime

__all__ = ["NodeEndpoints"]


class NodeEndpoints(SupervisorEndpoints):
    """The node list and this node's info."""

    def __init__(self, runtime: ServiceRuntime, sup: Supervisor, nodes: NodeDirectory) -> None:
        super().__init__(runtime, sup)
        self.nodes = nodes

    def routes(self) -> Sequence[Route]:
        return (
            Route("node_list", NODE_LIST, self.list, ListNodes),
            Route("node_info", node_info(self.node), self.info, GetNodeInfo),
            Route("node_mark_draining", NODE_MARK_DRAINING, self.mark_draining, MarkNodeDraining),
            Route("node_undrain", NODE_UNDRAIN, self.undrain, UndrainNode),
        )

    async def list(self, q: ListNodes, ctx: RequestContext) -> list[NodeView]:
        """``ws.qry.node.list``: every registered node with its state, by id."""
        Access.of(q.principal).reach(Resource.NODE, Action.READ)
        await self.runtime.follow()  # a node registered through another supervisor a moment ago
        # Copies taken on the store thread: projection changes the read model's own objects.
        known, placed = await self.runtime.store(
            lambda: ([copy.copy(n) for n in self.app.nodes.values()], self.app.placed_workspaces())
        )
        return await self.nodes.views(known, placed, parts=q.parts)

    async def info(self, q: GetNodeInfo, ctx: RequestContext) -> NodeInfo:
        """``ws.qry.node.info.<node>``: this node as its supervisor tells it now."""
        Access.of(q.principal).reach(Resource.NODE, Action.READ)
        return self.nodes.own_info()

    async def mark_draining(self, c: MarkNodeDraining, ctx: RequestContext) -> NodeView:
        """``ws.cmd.node.mark_draining``: record the node as draining (its realizer host part
        asks, as the drain begins); the node as the list now shows it."""
        Access.of(c.principal).reach(Resource.NODE, Action.CONTROL)
        reason = c.reason or f"node {c.node_id} drained"
        with self.acting(c.principal, reason):
            await self.runtime.store(self.app.drain_node, c.node_id, c.reason)
        views = await self.list(ListNodes(principal=c.principal, parts=False), ctx)
        return next(view for view in views if view.id == c.node_id)

    async def undrain(self, c: UndrainNode, ctx: RequestContext) -> NodeView:
        """``ws.cmd.node.undrain``: the node takes new project workspaces again (the admin key);
        its realizer host part stops passing over what waits."""
        Access.of(c.principal).reach(Resource.NODE, Action.CONTROL)
        with self.acting(c.principal, f"node {c.node_id} undrained"):
            await self.runtime.store(self.app.drain_node, c.node_id, None, draining=False)
        views = await self.list(ListNodes(principal=c.principal, parts=False), ctx)
        return next(view for view in views if view.id == c.node_id)
