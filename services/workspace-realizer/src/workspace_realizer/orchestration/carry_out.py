"""One project workspace leaving a draining node (docs/scale-out.md, "Draining a node"): its
worktrees' work carried to the project's remote, its record handed to the receiving node, and
what moved removed from this host.

The workspaces' locks are taken first, then the project workspace's checkout lock (the order of
realize and reopen), and the group is read again under them: a run that took a workspace since
the pass began makes the group wait. Nothing leaves this host before the receiving node has
rebuilt it; a failure at any step starts the stopped services again and leaves the group here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.base import Actor, Principal
from contracts.drains import (
    CarriedRef,
    MoveIn,
    MoveInWorkspaces,
    UnmovedWorkspace,
    WaitingWorkspace,
)
from workspace_realizer.adapters.carry import MOVE_REF_PREFIX
from workspace_realizer.orchestration.clone import remote_auth
from workspace_realizer.orchestration.drain_parts import remove_checkout, under_home
from workspace_realizer.settings import SERVICE_NAME
from workspace_realizer.usecases.host.planning import base_checkout

if TYPE_CHECKING:
    from workspace_realizer.adapters.ports import GitInvocation
    from workspace_realizer.orchestration.context import NodeMoves, Realizer
    from workspace_realizer.orchestration.drain_parts import PassReport
    from workspace_realizer.usecases.host.moves import DrainGroup

__all__ = ["carry_out"]

log = logging.getLogger(__name__)


class _Refused(Exception):
    """The group stays; ``unmoved`` says why for each of its workspaces."""

    def __init__(self, unmoved: list[UnmovedWorkspace]) -> None:
        super().__init__(unmoved[0].message if unmoved else "")
        self.unmoved = unmoved


async def carry_out(
    ctx: Realizer, moves: NodeMoves, group: DrainGroup, target: str, done: PassReport
) -> None:
    """Move ``group`` to ``target``; what happened goes into ``done``."""
    pw = group.project_workspace_id
    assert pw is not None
    async with contextlib.AsyncExitStack() as held:
        for ws in group.workspaces:
            await held.enter_async_context(ctx.locks.hold(f"workspace:{ws.id}"))
        await held.enter_async_context(ctx.locks.hold(f"checkout:{pw}"))
        fresh = await ctx.store(ctx.app.drain_group, ctx.node_id, pw)
        if fresh is None or {w.id for w in fresh.workspaces} != {w.id for w in group.workspaces}:
            done.refuse(group, "busy", "Its workspaces changed while the drain began; drain again.")
            return
        if any(ws.run_ids for ws in fresh.workspaces):
            done.waiting += [
                WaitingWorkspace(
                    workspace_id=ws.id, project_workspace_id=pw, run_ids=list(ws.run_ids)
                )
                for ws in fresh.workspaces
            ]
            return
        await _Move(ctx, moves, fresh, target).run(done)


class _Move:
    def __init__(self, ctx: Realizer, moves: NodeMoves, group: DrainGroup, target: str) -> None:
        self.ctx, self.moves, self.group, self.target = ctx, moves, group, target
        self.pw = group.project_workspace_id or ""
        self.root = Path(group.checkout_path) if group.checkout_path else None
        self.carried: list[MoveIn] = []

    async def run(self, done: PassReport) -> None:
        ctx, pw = self.ctx, self.pw
        try:
            await self._carry()
        except _Refused as refused:
            await self._restart_here(self.carried)
            done.unmoved += refused.unmoved
            return
        reason = f"node {ctx.node_id} is draining"
        await ctx.store(ctx.app.move_project_workspace, pw, self.target, reason)
        try:
            result = await self.moves.move_in(self.target, self._command())
            if self.group.workspaces and not result.moved:
                raise RuntimeError("; ".join(f.message for f in result.failed) or "nothing moved")
        except Exception as exc:
            back = f"the move to node {self.target} failed: {exc}"
            await ctx.store(ctx.app.move_project_workspace, pw, ctx.node_id, back)
            await self._restart_here(self.carried)
            done.refuse(self.group, "move_failed", f"Node {self.target} could not take it: {exc}")
            return
        done.project_workspaces.append(pw)
        done.moved += result.moved
        done.unmoved += result.failed
        moved = {m.workspace_id for m in result.moved}
        await self._restart_here([c for c in self.carried if c.workspace_id not in moved])
        await self._leave(moved, all_moved=not result.failed)

    def _command(self) -> MoveInWorkspaces:
        group = self.group
        return MoveInWorkspaces(
            principal=Principal(
                company_id=group.company_id, actor=Actor(type="system", id=SERVICE_NAME)
            ),
            project_workspace_id=self.pw,
            from_node=self.ctx.node_id,
            workspaces=self.carried,
            reason=f"node {self.ctx.node_id} drained",
        )

    def _refuse(self, workspace_id: str, reason: str, message: str) -> _Refused:
        others = [w.id for w in self.group.workspaces if w.id != workspace_id]
        first = UnmovedWorkspace(
            workspace_id=workspace_id,
            project_workspace_id=self.pw,
            reason=reason,  # type: ignore[arg-type]
            message=message,
        )
        rest = [
            UnmovedWorkspace(
                workspace_id=w,
                project_workspace_id=self.pw,
                reason="move_failed",
                message=f"Its project workspace stays: {message}",
            )
            for w in others
        ]
        return _Refused([first, *rest])

    async def _carry(self) -> None:
        """Stop each worktree's services and push its work, then the archived workspaces'
        rescue commits; the first failure refuses the group."""
        ctx, group = self.ctx, self.group
        if self.root is None or not group.repo_url:
            first = group.workspaces[0].id if group.workspaces else self.pw
            if group.workspaces or group.closed:
                raise self._refuse(first, "move_failed", "Its managed checkout is not ready here.")
            return
        base = await ctx.store(lambda: base_checkout(ctx.app.project_workspaces[self.pw]))
        auth = await remote_auth(ctx, base, None)
        for ws in group.workspaces:
            await self._carry_one(ws.id, ws.company_id, ws.generation, ws.cwd, auth)
        for closed in group.closed:
            refs = []
            for n, (ref, sha) in enumerate(closed.rescues):
                moved_ref = f"{MOVE_REF_PREFIX}{closed.id}/rescue-{n}"
                await self._push(closed.id, sha, moved_ref, auth, f"its rescue {ref}")
                refs.append(CarriedRef(ref=moved_ref, sha=sha))
            self.carried.append(
                MoveIn(
                    workspace_id=closed.id,
                    rescue_ref=None,
                    rescue_sha=None,
                    home_relative=under_home(ctx.home, closed.cwd) if closed.cwd else None,
                    closed=True,
                    carried_refs=refs,
                )
            )

    async def _carry_one(
        self, ws_id: str, company: str, generation: int, cwd: str | None, auth: GitInvocation | None
    ) -> None:
        ctx = self.ctx
        assert self.root is not None
        if cwd is None:
            raise self._refuse(ws_id, "move_failed", "It has no worktree path to carry.")
        try:
            services = await self.moves.stop_services(
                company, ws_id, generation, f"moving to node {self.target}"
            )
        except Exception as exc:
            raise self._refuse(ws_id, "move_failed", f"Its services did not stop: {exc}") from exc
        move = MoveIn(
            workspace_id=ws_id,
            rescue_ref=None,
            rescue_sha=None,
            home_relative=under_home(ctx.home, cwd),
            services=services,
        )
        ref = f"{MOVE_REF_PREFIX}{ws_id}"
        sink = ctx.recorder(company_id=company, workspace_id=ws_id, project_workspace_id=self.pw)
        try:
            rescue = await ctx.ports.git.write_rescue_ref(
                repo_root=self.root,
                path=Path(cwd),
                ref=ref,
                message=f"clipyard: work of workspace {ws_id}, moving to node {self.target}",
                sink=sink,
            )
        except Exception as exc:
            await self._restart_here([move])
            raise self._refuse(ws_id, "move_failed", f"Its work could not be saved: {exc}") from exc
        if rescue is not None:
            try:
                await self._push(ws_id, rescue.sha, ref, auth, "its work")
            except _Refused:
                await self._restart_here([move])
                raise
            move = MoveIn(
                workspace_id=ws_id,
                rescue_ref=rescue.ref,
                rescue_sha=rescue.sha,
                head_sha=rescue.head,
                file_count=rescue.file_count,
                home_relative=move.home_relative,
                services=services,
            )
        self.carried.append(move)

    async def _push(
        self, ws_id: str, sha: str, ref: str, auth: GitInvocation | None, what: str
    ) -> None:
        assert self.root is not None
        ctx, url = self.ctx, self.group.repo_url or ""
        sink = ctx.recorder(
            company_id=self.group.company_id, workspace_id=ws_id, project_workspace_id=self.pw
        )
        try:
            await ctx.ports.git.push_ref(
                repo_root=self.root, remote_url=url, sha=sha, ref=ref, auth=auth, sink=sink
            )
        except Exception as exc:
            message = f"{what} could not be pushed to {url}: {exc} (kept here)"
            raise self._refuse(ws_id, "push_refused", message[0].upper() + message[1:]) from exc

    async def _restart_here(self, carried: list[MoveIn]) -> None:
        for move in carried:
            if not move.services:
                continue
            try:
                _, warnings = await self.moves.start_services(
                    self.group.company_id, move.workspace_id, move.services, self.ctx.node_id
                )
            except Exception as exc:
                warnings = [str(exc)]
            for warning in warnings:
                log.warning("workspace %s stays here: %s", move.workspace_id, warning)

    async def _leave(self, moved: set[str], *, all_moved: bool) -> None:
        """Remove what moved from this host: its worktrees, the move refs on the remote, and
        the checkout once everything (the archived workspaces' rescues too) moved."""
        ctx = self.ctx
        assert self.root is not None or not self.group.workspaces
        for ws in self.group.workspaces:
            if ws.id not in moved or not ws.cwd or self.root is None:
                continue
            sink = ctx.recorder(
                company_id=ws.company_id, workspace_id=ws.id, project_workspace_id=self.pw
            )
            try:
                await ctx.ports.git.remove_worktree(
                    repo_root=self.root, path=Path(ws.cwd), sink=sink
                )
            except Exception:
                log.exception("the moved worktree %s stays on node %s", ws.cwd, ctx.node_id)
        await self._drop_move_refs()
        if all_moved and self.root is not None:
            await asyncio.to_thread(remove_checkout, ctx.home, self.root)

    async def _drop_move_refs(self) -> None:
        """Delete the move refs from the project's remote (the receiving node has fetched
        them: uncommitted files do not stay on the remote); a failure is logged."""
        if self.root is None or not self.group.repo_url:
            return
        refs = [c.rescue_ref for c in self.carried if c.rescue_ref]
        refs += [r.ref for c in self.carried for r in c.carried_refs]
        if not refs:
            return
        ctx = self.ctx
        base = await ctx.store(lambda: base_checkout(ctx.app.project_workspaces[self.pw]))
        sink = ctx.recorder(company_id=self.group.company_id, project_workspace_id=self.pw)
        try:
            auth = await remote_auth(ctx, base, None)
            await ctx.ports.git.drop_pushed_refs(
                repo_root=self.root, remote_url=self.group.repo_url, refs=refs, auth=auth, sink=sink
            )
        except Exception:
            log.exception("the move refs of %s stay on its remote", self.pw)
