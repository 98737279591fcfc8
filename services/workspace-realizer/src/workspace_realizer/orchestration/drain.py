"""Draining a node (docs/scale-out.md, "Draining a node"), on the drained node's host part.

A pass takes each project workspace placed here with its open execution workspaces (they move
together: the worktrees live in its checkout):

- a local ``cwd`` stays (a path on this host), as does a workspace without a project workspace
  or one working in the project workspace's own checkout;
- one a run holds waits (all of its project workspace's do): the host part passes again every
  few seconds while any waits;
- otherwise each worktree's runtime services stop, its work (HEAD, changes and untracked files)
  is written to ``refs/clipyard/moves/<id>`` and pushed to the project's remote with the
  company's git credential. When any push fails, nothing of that project workspace moves (the
  rescue ref stays here) and its services start again. Then the project workspace's record moves
  to the least-loaded other ready node, whose host part clones it and rebuilds each worktree
  (:mod:`.move_in`); what it rebuilt leaves this host, what it could not stays here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.base import Actor, Principal
from contracts.drains import (
    DrainReport,
    MoveIn,
    MoveInWorkspaces,
    UnmovedWorkspace,
    WaitingWorkspace,
)
from workspace_realizer.adapters.carry import MOVE_REF_PREFIX
from workspace_realizer.orchestration.clone import remote_auth
from workspace_realizer.orchestration.drain_parts import (
    PassReport,
    move_targets,
    remove_checkout,
    under_home,
)
from workspace_realizer.settings import SERVICE_NAME
from workspace_realizer.usecases.host.planning import base_checkout

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
            await self._move(group, target, done)

    async def _move(self, group: DrainGroup, target: str, done: PassReport) -> None:
        ctx, pw = self.ctx, group.project_workspace_id
        assert pw is not None
        async with contextlib.AsyncExitStack() as held:
            await held.enter_async_context(ctx.locks.hold(f"checkout:{pw}"))
            for ws in group.workspaces:
                await held.enter_async_context(ctx.locks.hold(f"workspace:{ws.id}"))
            carried, failed = await self._carry_all(group, target)
            if failed is not None:
                await self._restart_here(group, carried)
                done.unmoved.append(failed)
                others = [c.workspace_id for c in carried]
                done.unmoved += [
                    UnmovedWorkspace(
                        workspace_id=w,
                        project_workspace_id=pw,
                        reason="move_failed",
                        message=f"Its project workspace stays: {failed.message}",
                    )
                    for w in others
                ]
                return
            reason = f"node {ctx.node_id} is draining"
            await ctx.store(ctx.app.move_project_workspace, pw, target, reason)
            command = MoveInWorkspaces(
                principal=Principal(
                    company_id=group.company_id, actor=Actor(type="system", id=SERVICE_NAME)
                ),
                project_workspace_id=pw,
                from_node=ctx.node_id,
                workspaces=carried,
            )
            try:
                result = await self.moves.move_in(target, command)
            except Exception as exc:
                await ctx.store(
                    ctx.app.move_project_workspace,
                    pw,
                    ctx.node_id,
                    f"the move to {target} failed: {exc}",
                )
                await self._restart_here(group, carried)
                done.refuse(group, "move_failed", f"Node {target} could not take it: {exc}")
                return
            done.project_workspaces.append(pw)
            done.moved += result.moved
            done.unmoved += result.failed
            await self._leave(group, {m.workspace_id for m in result.moved}, not result.failed)
            failed_ids = {f.workspace_id for f in result.failed}
            await self._restart_here(group, [c for c in carried if c.workspace_id in failed_ids])

    async def _carry_all(
        self, group: DrainGroup, target: str
    ) -> tuple[list[MoveIn], UnmovedWorkspace | None]:
        """Stop each worktree's services and push its work; stop at the first failure."""
        ctx, pw = self.ctx, group.project_workspace_id
        root = Path(group.checkout_path) if group.checkout_path else None
        base = await ctx.store(lambda: base_checkout(ctx.app.project_workspaces[pw or ""]))
        auth = await remote_auth(ctx, base, None) if group.workspaces else None
        carried: list[MoveIn] = []
        for ws in group.workspaces:
            if root is None or ws.cwd is None or not group.repo_url:
                return carried, UnmovedWorkspace(
                    workspace_id=ws.id,
                    project_workspace_id=pw,
                    reason="move_failed",
                    message="Its project workspace's managed checkout is not ready here.",
                )
            services = await self.moves.stop_services(
                ws.company_id, ws.id, ws.generation, f"moving to node {target}"
            )
            sink = ctx.recorder(
                company_id=ws.company_id, workspace_id=ws.id, project_workspace_id=pw
            )
            ref = f"{MOVE_REF_PREFIX}{ws.id}"
            rescue = None
            try:
                rescue = await ctx.ports.git.write_rescue_ref(
                    repo_root=root,
                    path=Path(ws.cwd),
                    ref=ref,
                    message=f"clipyard: work of workspace {ws.id}, moving to node {target}",
                    sink=sink,
                )
                if rescue is not None:
                    await ctx.ports.git.push_ref(
                        repo_root=root,
                        remote_url=group.repo_url,
                        sha=rescue.sha,
                        ref=ref,
                        auth=auth,
                        sink=sink,
                    )
            except Exception as exc:
                move = MoveIn(
                    workspace_id=ws.id,
                    rescue_ref=None,
                    rescue_sha=None,
                    home_relative=None,
                    services=services,
                )
                await self._restart_here(group, [move])
                kept = rescue.ref if rescue is not None else None
                return carried, UnmovedWorkspace(
                    workspace_id=ws.id,
                    project_workspace_id=pw,
                    reason="push_refused",
                    message=f"Its work could not be pushed to {group.repo_url}: {exc}"
                    + (f" (kept here under {kept})" if kept else ""),
                    rescue_ref=kept,
                )
            carried.append(
                MoveIn(
                    workspace_id=ws.id,
                    rescue_ref=rescue.ref if rescue else None,
                    rescue_sha=rescue.sha if rescue else None,
                    file_count=rescue.file_count if rescue else 0,
                    home_relative=under_home(ctx.home, ws.cwd),
                    services=services,
                )
            )
        return carried, None

    async def _restart_here(self, group: DrainGroup, carried: list[MoveIn]) -> None:
        for move in carried:
            if move.services:
                _, warnings = await self.moves.start_services(
                    group.company_id, move.workspace_id, move.services, self.ctx.node_id
                )
                for warning in warnings:
                    log.warning(
                        "workspace %s stays on node %s: %s",
                        move.workspace_id,
                        self.ctx.node_id,
                        warning,
                    )

    async def _leave(self, group: DrainGroup, moved: set[str], all_moved: bool) -> None:
        """Remove what moved from this host: its worktrees, and the checkout once all did."""
        ctx, root = self.ctx, Path(group.checkout_path or "")
        for ws in group.workspaces:
            if ws.id in moved and ws.cwd and group.checkout_path:
                sink = ctx.recorder(
                    company_id=ws.company_id,
                    workspace_id=ws.id,
                    project_workspace_id=group.project_workspace_id,
                )
                try:
                    await ctx.ports.git.remove_worktree(
                        repo_root=root, path=Path(ws.cwd), sink=sink
                    )
                except Exception:
                    log.exception("the moved worktree %s stays on node %s", ws.cwd, ctx.node_id)
        if all_moved and group.checkout_path:
            await asyncio.to_thread(remove_checkout, ctx.home, root)
