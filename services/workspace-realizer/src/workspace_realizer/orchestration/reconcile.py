"""Branch reconcile (reference §4.3, §5.6): board only, on an idle worktree. ``forward`` and
``override`` move the record to the live branch (forward needs the recorded branch to be its
ancestor; override needs a reason); ``quarantine_restore`` keeps the live state in a rescue ref and
puts the worktree back on the recorded branch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from workspace_realizer.adapters.ports import HostOperationError, ReconcileOutcome
from workspace_realizer.domain.errors import BranchReconcileRefusedError
from workspace_realizer.domain.host.records import (
    ReconcileInspection,
    ReconcileRecord,
    RescueRefRecord,
)
from workspace_realizer.orchestration.facts import gather

if TYPE_CHECKING:
    from servicekit.access import Access
    from workspace_realizer.orchestration.context import Realizer
    from workspace_realizer.orchestration.facts import CloseFacts

__all__ = ["reconcile_branch"]


def _check(ctx: Realizer, access: Access, workspace_id: str) -> CloseFacts:
    facts = gather(ctx.app, access, workspace_id)
    ctx.app.load(workspace_id).check_reconcilable()
    return facts


async def reconcile_branch(
    ctx: Realizer,
    access: Access,
    workspace_id: str,
    mode: str,
    reason: str | None,
    operation_id: str | None = None,
) -> tuple[ReconcileOutcome, ReconcileInspection]:
    """Reconcile the workspace's recorded branch; return the host outcome and the inspection.

    Raises:
        AccessDeniedError: An agent asked (board only).
        BranchReconcileRefusedError: The conditions of ``mode`` do not hold (nothing recorded).
    """
    access.check_board("reconcile a workspace's branch")
    if mode == "override" and not (reason or "").strip():
        raise BranchReconcileRefusedError("override needs a reason.", field="reason")
    async with ctx.locks.hold(f"workspace:{workspace_id}"):
        facts = await ctx.store(_check, ctx, access, workspace_id)
        ws = facts.workspace
        stamp = (await ctx.store(ctx.app.stamp)).strftime("%Y%m%dT%H%M%SZ")
        sink = ctx.recorder(
            company_id=ws.company_id,
            workspace_id=ws.id,
            project_workspace_id=ws.project_workspace_id,
            issue_id=ws.source_issue_id,
            operation_id=operation_id,
        )
        try:
            outcome = await ctx.ports.git.reconcile_branch(
                repo_root=facts.repo_root or Path(ws.path or ""),
                path=Path(ws.path or ""),
                recorded_branch=ws.branch_name or "",
                mode=mode,  # type: ignore[arg-type]
                rescue_ref=f"refs/clipyard/rescue/{ws.id}/quarantine-{stamp}",
                sink=sink,
            )
        except HostOperationError as error:
            raise BranchReconcileRefusedError(str(error), **error.details) from error
        inspection: ReconcileInspection = {
            "worktreePath": ws.path,
            "repoRoot": str(facts.repo_root) if facts.repo_root else None,
            "fromBranch": outcome.from_branch,
            "toBranch": outcome.to_branch,
            "fromSha": outcome.from_sha,
            "toSha": outcome.to_sha,
            "ancestryVerdict": outcome.ancestry_verdict,
            "cleanliness": outcome.cleanliness,
            "plainLanguageReason": reason,
        }
        rescue: RescueRefRecord | None = (
            {
                "ref": outcome.rescue.ref,
                "sha": outcome.rescue.sha,
                "fileCount": outcome.rescue.file_count,
                "generation": ws.generation,
                "createdAt": (await ctx.store(ctx.app.stamp)).isoformat(),
            }
            if outcome.rescue
            else None
        )
        record = ReconcileRecord(
            to_branch=outcome.to_branch, inspection=inspection, rescue_ref=rescue
        )
        await ctx.store(ctx.app.record_reconcile, workspace_id, mode, reason, record)
        return outcome, inspection
