"""Reopen (DECISIONS 12): rebuild a closed workspace's worktree on its branch, restore the rescue
commit written by the archive being undone (none from an earlier archive) as uncommitted and
untracked files, run the provision command (the worktree was rebuilt), and mark it ``active`` with
a five-minute reopen fence. A failure leaves it closed with ``cleanupReason: reopen_failed``. It
never rebuilds over a worktree path or branch another open workspace owns."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from workspace_realizer.adapters.ports import RescueRef
from workspace_realizer.domain.errors import HostStepError, NotReopenableError
from workspace_realizer.orchestration.clone import checkout_root, remote_auth
from workspace_realizer.orchestration.facts import gather
from workspace_realizer.orchestration.provision import WorkspaceEnv, run_provision
from workspace_realizer.usecases.host.claims import check_unclaimed, worktree_lock

if TYPE_CHECKING:
    from servicekit.access import Access
    from workspace_realizer.domain.host.records import RescueRefRecord
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.orchestration.facts import CloseFacts

__all__ = ["reopen"]


def _check(ctx: Realizer, access: Access, workspace_id: str, expected: int | None) -> CloseFacts:
    facts = gather(ctx.app, access, workspace_id)
    ctx.app.load(workspace_id).check_reopenable(expected)
    _check_unclaimed(ctx, facts)
    return facts


def _check_unclaimed(ctx: Realizer, facts: CloseFacts) -> None:
    ws = facts.workspace
    if ws.is_worktree and ws.path:
        check_unclaimed(
            ctx.app,
            path=ws.path,
            branch=ws.branch_name,
            project_workspace_id=ws.project_workspace_id,
            exclude=ws.id,
        )


async def reopen(
    ctx: Realizer,
    access: Access,
    workspace_id: str,
    *,
    expected_generation: int | None = None,
    operation_id: str | None = None,
) -> str:
    """Reopen a closed workspace; return its id.

    Raises:
        NotReopenableError: It is open or being archived, or it could not be rebuilt.
        FenceError: ``expected_generation`` is not the current generation.
        StateConflictError: Another open workspace owns its worktree path or branch.
    """
    async with ctx.locks.hold(f"workspace:{workspace_id}"):
        facts = await ctx.store(_check, ctx, access, workspace_id, expected_generation)
        async with ctx.locks.hold(worktree_lock(facts.workspace.path or workspace_id)):
            # Under the path's lock (a realization creating there holds it too), check again.
            facts = await ctx.store(_check, ctx, access, workspace_id, expected_generation)
            return await _reopen(ctx, facts, operation_id)


async def _reopen(ctx: Realizer, facts: CloseFacts, operation_id: str | None) -> str:
    workspace_id = facts.workspace.id
    generation = facts.workspace.generation
    restored: RescueRefRecord | None = None
    try:
        restored = await _rebuild(ctx, facts, operation_id)
    except Exception as error:
        await ctx.store(
            ctx.app.record_reopen,
            workspace_id,
            generation,
            error=str(error),
            restored_from=None,
            operation_id=operation_id,
        )
        raise NotReopenableError(
            f"The workspace could not be rebuilt: {error}", workspaceId=workspace_id
        ) from error
    await ctx.store(
        ctx.app.record_reopen,
        workspace_id,
        generation,
        error=None,
        restored_from=restored,
        operation_id=operation_id,
    )
    return workspace_id


async def _rebuild(
    ctx: Realizer, facts: CloseFacts, operation_id: str | None
) -> RescueRefRecord | None:
    ws = facts.workspace
    if not ws.is_worktree or not ws.path or not ws.branch_name:
        return None
    if facts.base is None:
        raise NotReopenableError(
            "Its project workspace is gone; there is no repository to rebuild it from.",
            workspaceId=ws.id,
        )
    root = await checkout_root(ctx, facts.base, operation_id)
    sink = ctx.recorder(
        company_id=ws.company_id,
        workspace_id=ws.id,
        project_workspace_id=ws.project_workspace_id,
        issue_id=ws.source_issue_id,
        operation_id=operation_id,
    )
    base = await ctx.ports.git.resolve_base_ref(
        repo_root=root,
        configured=ws.base_ref,
        auth=await remote_auth(ctx, facts.base, operation_id),
        sink=sink,
    )
    # Only the rescue written by the archive being undone (its generation is the current one):
    # an older archive's rescue belongs to work that was since reopened and archived again.
    newest = next((r for r in ws.rescue_refs if r.get("generation") == ws.generation), None)
    rescue = (
        RescueRef(ref=newest["ref"], sha=newest["sha"], file_count=newest.get("fileCount", 0))
        if newest
        else None
    )
    outcome = await ctx.ports.git.restore_worktree(
        repo_root=root,
        path=Path(ws.path),
        branch=ws.branch_name,
        base=base,
        rescue=rescue,
        sink=sink,
    )
    if outcome.created:
        identifier = next((i.identifier for i in facts.linked if i.id == ws.source_issue_id), "")
        env = WorkspaceEnv(
            company_id=ws.company_id,
            project_id=ws.project_id,
            issue_id=ws.source_issue_id,
            issue_identifier=identifier,
            cwd=str(outcome.path),
            branch=outcome.branch,
            base_cwd=str(root),
            repo_root=str(root),
            repo_ref=base.ref,
            repo_url=ws.repo_url,
            created=True,
        )
        # A failed provision is recorded on the workspace and runs again at the next
        # realization; it does not undo the rebuild.
        with contextlib.suppress(HostStepError):
            await run_provision(
                ctx,
                workspace_id=ws.id,
                command=ws.config.get("provisionCommand"),
                env=env,
                sink=sink,
                operation_id=operation_id,
            )
    return newest
