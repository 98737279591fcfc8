"""Draining a node (docs/scale-out.md, "Draining a node"), on the drained node's host part.

A pass takes each project workspace placed here with its open execution workspaces (they move
together: the worktrees live in its checkout):

- a local ``cwd`` stays (a path on this host), as does a workspace without a project workspace
  or one working in the project workspace's own checkout;
- one a run holds waits (all of its project workspace's do): the host part passes again every
  few seconds while any waits;
- otherwise it moves to the least-loaded other ready node (:mod:`.carry_out`, and
  :mod:`.move_in` on that node). A group that fails stays, and the pass goes on with the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from contracts.drains import DrainReport, WaitingWorkspace
from workspace_realizer.orchestration.carry_out import carry_out
from workspace_realizer.orchestration.drain_parts import PassReport, move_targets

if TYPE_CHECKING:
    from workspace_realizer.orchestration.context import NodeMoves, Realizer
    from workspace_realizer.usecases.host.moves import DrainGroup

__all__ = ["DRAIN_RETRY", "Drainer"]

log = logging.getLogger(__name__)

DRAIN_RETRY = 5.0
"""Seconds between the passes that move the workspaces runs held."""


class Drainer:
    """Drains this host part's node: one pass when asked, then again while runs hold some."""

    def __init__(self, ctx: Realizer) -> None:
        self.ctx = ctx
        self._follow_up: asyncio.Task[None] | None = None
        self._pass_lock = asyncio.Lock()

    @property
    def moves(self) -> NodeMoves:
        if self.ctx.moves is None:
            raise RuntimeError("this realizer is not wired to drain")
        return self.ctx.moves

    async def drain(self, reason: str | None) -> DrainReport:
        """Mark the node draining, move what can move now, and keep moving what runs hold."""
        await self.moves.mark_draining(self.ctx.node_id, reason)
        report = await self.run_pass()
        if report.waiting and (self._follow_up is None or self._follow_up.done()):
            self._follow_up = asyncio.create_task(self._keep_draining(), name="drain-follow-up")
        return report

    async def close(self) -> None:
        """Stop the follow-up passes (the service stops)."""
        if self._follow_up is not None:
            self._follow_up.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._follow_up

    async def _keep_draining(self) -> None:
        while True:
            await asyncio.sleep(DRAIN_RETRY)
            try:
                nodes = await self.moves.nodes()
                if not any(n.id == self.ctx.node_id and n.state == "draining" for n in nodes):
                    log.info("node %s is no longer draining: what waits stays", self.ctx.node_id)
                    return
                report = await self.run_pass()
            except Exception:
                log.exception("a drain pass of node %s failed; retrying", self.ctx.node_id)
                continue
            if not report.waiting:
                log.info("node %s drained: %d left on it", self.ctx.node_id, report.remaining)
                return

    async def run_pass(self) -> DrainReport:
        """Move every idle repo-only project workspace of this node; report the rest."""
        async with self._pass_lock:
            ctx = self.ctx
            groups = await ctx.store(ctx.app.drain_groups, ctx.node_id)
            nodes = await self.moves.nodes()
            load = {n.id: n.workspaces for n in move_targets(nodes, ctx.node_id)}
            done = PassReport()
            for group in groups:
                target = min(load, key=lambda n: (load[n], n)) if load else None
                await self._group(group, target, done)
                if target is not None and group.project_workspace_id in done.project_workspaces:
                    load[target] += 1 + len(group.workspaces)
            remaining = await ctx.store(ctx.app.placed_on, ctx.node_id)
            return DrainReport(
                node_id=ctx.node_id,
                moved=done.moved,
                project_workspaces_moved=done.project_workspaces,
                not_moved=done.unmoved,
                waiting=done.waiting,
                remaining=remaining,
            )

    async def _group(self, group: DrainGroup, target: str | None, done: PassReport) -> None:
        pw = group.project_workspace_id
        if pw is None:
            done.refuse(
                group,
                "no_project_workspace",
                "It has no project workspace to clone elsewhere (adapter-managed, or its project workspace was deleted); archive it.",
            )
        elif group.local_cwd is not None:
            done.refuse(
                group,
                "local_checkout",
                f"Its project workspace is the local checkout {group.local_cwd} on this host; move it by hand, or archive its workspaces.",
            )
        elif any(ws.run_ids for ws in group.workspaces):
            held = [r for ws in group.workspaces for r in ws.run_ids]
            done.waiting += [
                WaitingWorkspace(
                    workspace_id=ws.id, project_workspace_id=pw, run_ids=list(ws.run_ids) or held
                )
                for ws in group.workspaces
            ]
        elif any(ws.closing for ws in group.workspaces):
            done.refuse(
                group,
                "busy",
                "One of its workspaces is being archived; drain again once that ends.",
            )
        elif not all(ws.worktree for ws in group.workspaces):
            done.refuse(
                group,
                "local_checkout",
                "A workspace works in the project workspace's own checkout (shared); archive it, then drain again.",
            )
        elif target is None:
            done.refuse(
                group,
                "no_other_node",
                "No other worker node is ready (with its workspace-realizer) to take it; start one, then drain again.",
            )
        else:
            try:
                await carry_out(self.ctx, self.moves, group, target, done)
            except Exception as exc:  # the group stays; the next one is tried
                log.exception("project workspace %s could not move", pw)
                done.refuse(group, "move_failed", f"The move failed: {exc}; drain again.")
