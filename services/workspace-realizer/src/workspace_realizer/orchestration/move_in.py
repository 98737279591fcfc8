"""The receiving side of a drain (docs/scale-out.md, "Draining a node"): this node's host part
clones the project workspace that was moved here, then rebuilds each of its worktrees from the
move ref the drained node pushed: the branch at the same commit, the uncommitted and untracked
files back as they were. It runs the provision command (ignored files such as installed
dependencies do not travel) and starts the runtime services that were running. An archived
workspace's rescue commits are fetched so that a reopen here finds them. A worktree it cannot
rebuild is reported and left on the drained node; nothing half-built stays here.

What is asked is checked first: each workspace must be of the project workspace, on the node
it comes from, and its path must stay under this node's ``CLIPYARD_HOME``."""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from contracts.drains import MovedWorkspace, MoveInResult, UnmovedWorkspace
from workspace_realizer.adapters.carry import MOVE_REF_PREFIX
from workspace_realizer.adapters.ports import RescueRef
from workspace_realizer.domain.errors import HostStepError, InvalidInputError
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

__all__ = ["check_move_in", "move_in"]

log = logging.getLogger(__name__)


def check_move_in(ctx: Realizer, command: MoveInWorkspaces) -> None:
    """On the store's thread: refuse a move-in that is not what a drain sends.

    Raises:
        InvalidInputError: A workspace of another project workspace, company or node, a path
            outside this node's home, or a ref that is not the workspace's move ref.
    """
    app, pw_id = ctx.app, command.project_workspace_id
    pw = app.project_workspaces.get(pw_id)
    if pw is None or pw.deleted or pw.node_id != ctx.node_id:
        raise InvalidInputError(f"Project workspace {pw_id} is not being moved to this node.")
    if pw.company_id != command.principal.company_id:
        raise InvalidInputError(f"Project workspace {pw_id} is not this company's.")
    for move in command.workspaces:
        ws = app.workspaces.get(move.workspace_id)
        if ws is None or ws.project_workspace_id != pw_id or ws.node_id != command.from_node:
            raise InvalidInputError(
                f"Workspace {move.workspace_id} is not of {pw_id} on node {command.from_node}."
            )
        relative = move.home_relative
        if relative is not None and (
            PurePosixPath(relative).is_absolute() or ".." in PurePosixPath(relative).parts
        ):
            raise InvalidInputError(f"{relative!r} is not a path under the node's home.")
        own = f"{MOVE_REF_PREFIX}{move.workspace_id}"
        refs = [move.rescue_ref or own, *(r.ref for r in move.carried_refs)]
        if any(ref != own and not ref.startswith(f"{own}/") for ref in refs):
            raise InvalidInputError(f"A ref of workspace {move.workspace_id} is not its own.")


async def move_in(ctx: Realizer, command: MoveInWorkspaces) -> MoveInResult:
    """Take ``command.project_workspace_id`` (already recorded on this node) and rebuild its
    worktrees here."""
    pw = command.project_workspace_id
    await ctx.store(check_move_in, ctx, command)
    try:
        root = await ensure_checkout(ctx, pw, None)
    except Exception as exc:
        return MoveInResult(
            failed=[
                _failed(m, pw, f"Node {ctx.node_id} could not clone its project workspace: {exc}")
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
                _failed(move, pw, f"Node {ctx.node_id} could not rebuild it: {exc}")
            )
        else:
            if moved is not None:
                result.moved.append(moved)
    return result


def _failed(move: MoveIn, pw: str, message: str) -> UnmovedWorkspace:
    return UnmovedWorkspace(
        workspace_id=move.workspace_id,
        project_workspace_id=pw,
        reason="move_failed",
        message=message,
        rescue_ref=move.rescue_ref,
    )


async def _rebuild(
    ctx: Realizer, base: BaseCheckout, root: Path, auth: GitInvocation | None, move: MoveIn
) -> MovedWorkspace | None:
    ws: ExecutionWorkspace = await ctx.store(lambda: ctx.app.workspaces[move.workspace_id])
    sink = ctx.recorder(
        company_id=ws.company_id, workspace_id=move.workspace_id, project_workspace_id=base.id
    )
    path = ctx.home / move.home_relative if move.home_relative else Path(ws.cwd or "")
    for carried in move.carried_refs:  # an archived workspace's rescues, for a reopen here
        await ctx.ports.git.fetch_ref(
            repo_root=root,
            remote_url=base.repo_url or "",
            ref=carried.ref,
            expected_sha=carried.sha,
            auth=auth,
            sink=sink,
        )
    if move.closed:
        cwd = str(path) if ws.cwd else None
        await ctx.store(_record, ctx, move.workspace_id, base.id, cwd, None)
        return None
    if not ws.branch_name or not ws.cwd:
        raise RuntimeError(f"workspace {move.workspace_id} has no branch or path to rebuild")
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
    if move.head_sha and outcome.head_sha != move.head_sha:
        kept.append(f"the rebuilt HEAD is {outcome.head_sha}, not {move.head_sha}")
    record: RescueRefRecord | None = None
    if rescue is not None:
        record = {
            "ref": rescue.ref,
            "sha": rescue.sha,
            "fileCount": rescue.file_count,
            "generation": ws.lifecycle_generation,
            "createdAt": datetime.now(UTC).isoformat(),
        }
    try:
        if kept:  # the work did not come back as it was
            raise RuntimeError(" ".join(kept))
        await ctx.store(_record, ctx, move.workspace_id, base.id, str(outcome.path), record)
    except Exception:  # leave nothing half-built here: it stays where it was
        with contextlib.suppress(Exception):
            await ctx.ports.git.remove_worktree(repo_root=root, path=path, sink=sink)
        raise
    return await _after(ctx, ws, base, root, outcome, move, baseref.ref)


def _record(
    ctx: Realizer,
    workspace_id: str,
    pw_id: str,
    cwd: str | None,
    rescue: RescueRefRecord | None,
) -> None:
    """On the store's thread: record the move, once the project workspace is still here (a
    drained node that gave up waiting moved it back)."""
    if ctx.app.project_workspaces[pw_id].node_id != ctx.node_id:
        raise RuntimeError("its project workspace was taken back by the drained node")
    ctx.app.record_move(workspace_id, ctx.node_id, cwd, rescue, None)


async def _after(
    ctx: Realizer,
    ws: ExecutionWorkspace,
    base: BaseCheckout,
    root: Path,
    outcome: WorktreeOutcome,
    move: MoveIn,
    repo_ref: str | None,
) -> MovedWorkspace:
    """The rebuilt workspace's provision and services: their failures are warnings (the move
    stands)."""
    warnings: list[str] = []
    try:
        await _provision(ctx, ws, base, root, outcome, repo_ref)
    except Exception as exc:
        warnings.append(f"the provision command did not run: {exc}")
    started: list[str] = []
    if move.services and ctx.moves is not None:
        try:
            started, failed = await ctx.moves.start_services(
                ws.company_id, move.workspace_id, list(move.services), ctx.node_id
            )
            warnings += failed
        except Exception as exc:
            warnings.append(f"its services did not start: {exc}")
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
    workspace and runs again at the next realization)."""
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
