"""Read-model aggregates of the host part (execution workspaces, their operations, close
readiness) -> the contract views the realizer answers with (built on the store's thread, where the
read models are consistent)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from contracts import execution_views as ev
from contracts.workspace_config import ExecutionWorkspaceConfig
from servicekit import workspace_audit

if TYPE_CHECKING:
    from workspace_realizer.domain.host import ExecutionWorkspace, WorkspaceOperation
    from workspace_realizer.domain.host.readiness import Readiness
    from workspace_realizer.domain.host.records import RescueRefRecord
    from workspace_realizer.orchestration.facts import CloseFacts, Delivery
    from workspace_realizer.readmodels import RealizerReadModels

__all__ = [
    "operation_detail",
    "operation_row",
    "readiness_view",
    "rescue_view",
    "summary_view",
    "workspace_row",
    "workspace_view",
]


def _convert(value: Any, kind: type[Any]) -> Any:
    return None if value is None else msgspec.convert(value, kind)


def rescue_view(ref: RescueRefRecord) -> ev.RescueRefView:
    """A stored rescue ref as the API shows it."""
    return ev.RescueRefView(
        ref=ref["ref"],
        sha=ref["sha"],
        file_count=ref.get("fileCount", 0),
        generation=ref.get("generation", 0),
        created_at=datetime.fromisoformat(ref["createdAt"]),
    )


def workspace_row(app: RealizerReadModels, ws: ExecutionWorkspace) -> ev.ExecutionWorkspaceRow:
    """A list row: no git was run for it."""
    company = app.company_copy(ws.company_id)
    return ev.ExecutionWorkspaceRow(
        id=str(ws.id),
        company_id=ws.company_id,
        project_id=ws.project_id,
        project_workspace_id=ws.project_workspace_id,
        source_issue_id=ws.source_issue_id,
        mode=ws.mode,  # type: ignore[arg-type]
        strategy_type=ws.strategy_type,  # type: ignore[arg-type]
        provider_type=ws.provider_type,  # type: ignore[arg-type]
        provider_ref=ws.provider_ref,
        name=ws.name,
        status=ws.status,  # type: ignore[arg-type]
        cwd=ws.cwd,
        repo_url=ws.repo_url,
        base_ref=ws.base_ref,
        branch_name=ws.branch_name,
        node_id=ws.node_id,
        config=_convert(ws.config, ExecutionWorkspaceConfig) if ws.config else None,
        linked_issue_ids=[str(issue.id) for issue in app.issues_linked_to(ws)],
        lifecycle_generation=ws.lifecycle_generation,
        opened_at=ws.opened_at,
        last_used_at=ws.last_used_at,
        closed_at=ws.closed_at,
        cleanup_eligible_at=ws.cleanup_eligible_at,
        cleanup_reason=ws.cleanup_reason,
        rescue_refs=[rescue_view(ref) for ref in ws.rescue_refs],
        created_at=ws.created_on,
        updated_at=ws.modified_on,
        unconfined=bool(company is not None and company.host_trusted),
    )


def workspace_view(
    app: RealizerReadModels, ws: ExecutionWorkspace, delivery: Delivery | None = None
) -> ev.ExecutionWorkspace:
    """The detail: the row plus delivery state (when inspected) and runtime provisioning."""
    runtime: Literal["deferred", "none"] = (
        "deferred" if ws.config.get("runtimeProvisionCommand") else "none"
    )
    row = workspace_row(app, ws)
    return ev.ExecutionWorkspace(
        **msgspec.structs.asdict(row),
        delivery_state=delivery.state if delivery else "unknown",  # type: ignore[arg-type]
        commits_ahead=delivery.commits_ahead if delivery else None,
        runtime_provisioning=ev.RuntimeProvisioning(state=runtime),
    )


def summary_view(ws: ExecutionWorkspace) -> ev.ExecutionWorkspaceSummary:
    """A row of ``?summary=true``."""
    return ev.ExecutionWorkspaceSummary(
        id=str(ws.id),
        name=ws.name,
        mode=ws.mode,  # type: ignore[arg-type]
        status=ws.status,  # type: ignore[arg-type]
        cwd=ws.cwd,
        branch_name=ws.branch_name,
        project_workspace_id=ws.project_workspace_id,
        last_used_at=ws.last_used_at,
    )


def operation_row(operation: WorkspaceOperation) -> ev.WorkspaceOperation:
    """A list row: no excerpts."""
    return workspace_audit.operation_row(operation, "realizer")


def operation_detail(operation: WorkspaceOperation) -> ev.WorkspaceOperationDetail:
    """The row plus the last 64 KiB of each stream."""
    return workspace_audit.operation_detail(operation, "realizer")


def readiness_view(
    facts: CloseFacts, readiness: Readiness, delivery: Delivery
) -> ev.CloseReadiness:
    """``GET .../close-readiness``."""
    inspection = delivery.inspection
    git = (
        ev.GitFacts(
            branch=inspection.branch,
            head_sha=inspection.head_sha,
            dirty_count=inspection.dirty_count,
            untracked_count=inspection.untracked_count,
            ahead=inspection.ahead,
            behind=inspection.behind,
        )
        if inspection is not None
        else None
    )
    return ev.CloseReadiness(
        workspace_id=facts.workspace.id,
        state=readiness.state,
        blocking_reasons=list(readiness.blocking_reasons),
        warnings=list(readiness.warnings),
        planned_actions=[ev.CloseAction(**action) for action in readiness.planned_actions],
        delivery_state=delivery.state,  # type: ignore[arg-type]
        commits_ahead=delivery.commits_ahead,
        git=git,
        linked_issues=[
            ev.LinkedIssue(
                id=i.id,
                identifier=i.identifier,
                title=i.title,
                status=i.status,
                is_terminal=i.is_terminal,
            )
            for i in facts.linked
        ],
        is_shared_workspace=readiness.is_shared,
        is_destructive_close_allowed=not readiness.blocking_reasons,
    )
