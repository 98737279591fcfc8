"""Endpoints of draining a node (docs/scale-out.md, "Draining a node"), on this node's host
part: the drain itself (``ws.cmd.workspace.drain_node.<node>``, the admin key) and the other
side of a move (``ws.cmd.workspace.move_in.<node>``, Clipyard itself: the drained node's host
part)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts.drains import DrainNode, DrainReport, MoveInResult, MoveInWorkspaces
from contracts.drains import drain_node as drain_subject
from contracts.drains import move_in as move_in_subject
from eventstore import acting
from servicekit.access import Access, AccessDeniedError, Action, Resource
from servicekit.routes import Route
from workspace_realizer.endpoints.common import Endpoints, cause_of
from workspace_realizer.orchestration.drain import Drainer
from workspace_realizer.orchestration.move_in import move_in
from workspace_realizer.settings import SERVICE_NAME

if TYPE_CHECKING:
    from collections.abc import Sequence

    from natsbus import RequestContext
    from servicekit import ServiceRuntime
    from workspace_realizer.orchestration.context import Realizer

__all__ = ["DrainEndpoints"]


class DrainEndpoints(Endpoints):
    """Drain this node; take a project workspace moved here."""

    def __init__(self, runtime: ServiceRuntime, realizer: Realizer) -> None:
        super().__init__(runtime)
        self.realizer = realizer
        self.drainer = Drainer(realizer)
        runtime.exit_stack.push_async_callback(self.drainer.close)

    def routes(self) -> Sequence[Route]:
        """Both carry this node: they run git on its host."""
        return (
            Route("node_drain", drain_subject(self.node), self.drain, DrainNode),
            Route("workspace_move_in", move_in_subject(self.node), self.move_in, MoveInWorkspaces),
        )

    async def drain(self, c: DrainNode, ctx: RequestContext) -> DrainReport:
        """``ws.cmd.workspace.drain_node.<node>``: mark the node draining and move what can
        move now (a pass; the ones runs hold move when they end)."""
        Access.of(c.principal).reach(Resource.NODE, Action.CONTROL)
        await self.runtime.follow()
        reason = c.reason or f"node {self.node} drained"
        with acting(cause_of(c.principal, reason)):
            return await self.drainer.drain(c.reason)

    async def move_in(self, c: MoveInWorkspaces, ctx: RequestContext) -> MoveInResult:
        """``ws.cmd.workspace.move_in.<node>``: clone the project workspace moved here and
        rebuild its worktrees (only another node's host part asks)."""
        actor = c.principal.actor
        if actor.type != "system" or actor.id != SERVICE_NAME:
            raise AccessDeniedError(
                "Only a drained node's workspace-realizer moves workspaces here "
                "(POST /api/nodes/{id}/drain)."
            )
        await self.runtime.follow()  # the drained node has just recorded the move
        reason = c.reason or f"moved from node {c.from_node}"
        with acting(cause_of(c.principal, reason)):
            return await move_in(self.realizer, c)
