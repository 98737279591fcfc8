"""The receiving side of a drain (docs/scale-out.md, "Draining a node"): this node's host part
clones the project workspace that was moved here, then rebuilds each of its worktrees from the
move ref the drained node pushed: the branch at the same commit, the uncommitted and untracked
files back as they were. It runs the provision command (ignored files such as installed
dependencies do not travel) and starts the runtime services that were running. A worktree it
cannot rebuild is reported and left on the drained node; nothing half-built stays here."""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.drains import MovedWorkspace, MoveInResult, UnmovedWorkspace
from workspace_realizer.adapters.ports import RescueRef
from workspace_realizer.domain.errors import HostStepError
from workspace_realizer.orchestration.clone import ensure_checkout, remote_auth
from workspace_realizer.orchestration.provision import WorkspaceEnv, run_provision
from workspace_realizer.usecases.host.planning import base_checkout

if TYPE_CHECKING:
    from contracts.drains import MoveIn, MoveInWorkspaces
    from workspace_realizer.adapters.ports import GitInvocation, WorktreeOutcome
    from workspace_realizer.domain.host import ExecutionWorkspace
    from workspace_realizer.domain.host.records import RescueRefRecord
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.usecases.host.planning import BaseCheckout

__all__ = ["move_in"]

log = logging.getLogger(__name__)


async def move_in(ctx: Realizer, command: MoveInWorkspaces) -> MoveInResult:
    """Take ``command.project_workspace_id`` (already recorded on this node) and rebuild its
    worktrees here."""
    pw = command.project_workspace_id
    try:
        root = await ensure_checkout(ctx, pw, None)
    except Exception as exc:
        return MoveInResult(
            failed=[
                UnmovedWorkspace(
                    workspace_id=m.workspace_id,
                    project_workspace_id=pw,
                    reason="move_failed",
                    message=f"Node {ctx.node_id} could not clone its project workspace: {exc}",
                )
                for m in command.workspaces
            ]
        )
    base = await ctx.store(lambda: base_checkout(ctx.app.project_workspaces[pw]))
    auth = await remote_auth(ctx, base, None)
    result = MoveInResult()
    for move in command.workspaces:
        try:
            async with ctx.locks.hold(f"workspace:{move.workspace_id}"):
                moved = await _rebuild(ctx, base, root, auth, move)
        except Exception as exc:
            log.exception("workspace %s could not be rebuilt on %s", move.workspace_id, ctx.node_id)
            result.failed.append(
                UnmovedWorkspace(
                    workspace_id=move.workspace_id,
                    project_workspace_id=pw,
                    reason="move_failed",
                    message=f"Node {ctx.node_id} could not rebuild it: {exc}",
                    rescue_ref=move.rescue_ref,
                )
            )
        else:
            result.moved.append(moved)
    return result


async def _rebuild(
    ctx: Realizer, base: BaseCheckout, root: Path, auth: GitInvocation | None, move: MoveIn
) -> MovedWorkspace:
    ws: ExecutionWorkspace = await ctx.store(lambda: ctx.app.workspaces[move.workspace_id])
    if not ws.branch_name or not ws.cwd:
        raise RuntimeError(f"workspace {ws.id} has no branch or path to rebuild")
    path = ctx.home / move.home_relative if move.home_relative else Path(ws.cwd)
    sink = ctx.recorder(
        company_id=ws.company_id, workspace_id=move.workspace_id, project_workspace_id=base.id
    )
    rescue: RescueRef | None = None
    if move.rescue_ref and move.rescue_sha:
        await ctx.ports.git.fetch_ref(
            repo_root=root,
            remote_url=base.repo_url or "",
            ref=move.rescue_ref,
            expected_sha=move.rescue_sha,
            auth=auth,
            sink=sink,
        )
        rescue = RescueRef(ref=move.rescue_ref, sha=move.rescue_sha, file_count=move.file_count)
    baseref = await ctx.ports.git.resolve_base_ref(
        repo_root=root, configured=ws.base_ref, auth=auth, sink=sink
    )
    outcome = await ctx.ports.git.restore_worktree(
        repo_root=root, path=path, branch=ws.branch_name, base=baseref, rescue=rescue, sink=sink
    )
    kept = [w for w in outcome.warnings if "rescue" in w]
    if kept:  # the files did not come back: leave nothing half-built, keep it where it was
        with contextlib.suppress(Exception):
            await ctx.ports.git.remove_worktree(repo_root=root, path=path, sink=sink)
        raise RuntimeError(" ".join(kept))
    record: RescueRefRecord | None = None
    if rescue is not None:
        record = {
            "ref": rescue.ref,
            "sha": rescue.sha,
            "fileCount": rescue.file_count,
            "generation": ws.lifecycle_generation,
            "createdAt": datetime.now(UTC).isoformat(),
        }
    await ctx.store(
        ctx.app.record_move, move.workspace_id, ctx.node_id, str(outcome.path), record, None
    )
    await _provision(ctx, ws, base, root, outcome, baseref.ref)
    started: list[str] = []
    warnings: list[str] = []
    if move.services and ctx.moves is not None:
        started, warnings = await ctx.moves.start_services(
            ws.company_id, move.workspace_id, list(move.services), ctx.node_id
        )
    return MovedWorkspace(
        workspace_id=move.workspace_id,
        project_workspace_id=base.id,
        to_node=ctx.node_id,
        cwd=str(outcome.path),
        rescue_ref=move.rescue_ref,
        file_count=move.file_count,
        services_restarted=started,
        warnings=warnings,
    )


async def _provision(
    ctx: Realizer,
    ws: ExecutionWorkspace,
    base: BaseCheckout,
    root: Path,
    outcome: WorktreeOutcome,
    repo_ref: str | None,
) -> None:
    """Run the provision command in the rebuilt worktree (its failure is recorded on the
    workspace and runs again at the next realization; the move stands)."""
    env = WorkspaceEnv(
        company_id=base.company_id,
        project_id=base.project_id,
        issue_id=ws.source_issue_id,
        issue_identifier="",
        cwd=str(outcome.path),
        branch=outcome.branch,
        base_cwd=str(root),
        repo_root=str(root),
        repo_ref=repo_ref,
        repo_url=base.repo_url,
        created=True,
    )
    with contextlib.suppress(HostStepError):
        await run_provision(
            ctx,
            workspace_id=str(ws.id),
            command=ws.config.get("provisionCommand"),
            env=env,
            sink=ctx.recorder(company_id=base.company_id, workspace_id=str(ws.id)),
            operation_id=None,
        )
