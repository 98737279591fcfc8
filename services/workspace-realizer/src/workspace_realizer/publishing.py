"""The one place where the workspace-realizer's stored domain events become public contracts.

Private (``None``): the company copies (the gateway's facts), the archive saga's start, provision
outcomes, and workspace operations (queried, not published). The lifecycle events of execution
workspaces are classes of :class:`WorkspaceLifecycle`, where their methods are declared.
"""

# Event classes made by eventsourcing's ``@event`` decorator are invisible to mypy.
# mypy: disable-error-code=attr-defined

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from contracts import execution_events as ee
from contracts import workspace_events as we
from contracts.base import Event
from contracts.execution_views import BranchInspection, RescueRefView
from contracts.workspace_config import (
    ExecutionWorkspaceConfig,
    ExecutionWorkspacePolicy,
    ExecutionWorkspaceSettings,
    ManagedCheckout,
    RuntimeConfig,
)
from servicekit.publishing import ContractMap, Envelope, envelope
from workspace_realizer.domain import Issue as I
from workspace_realizer.domain import Project as P
from workspace_realizer.domain import ProjectWorkspace as PW
from workspace_realizer.domain.host import ExecutionWorkspace as W
from workspace_realizer.domain.host.lifecycle import WorkspaceLifecycle as L
from workspace_realizer.domain.host.records import RescueRefRecord
from workspace_realizer.domain.issues import TERMINAL_STATUSES
from workspace_realizer.settings import SERVICE_NAME
from workspace_realizer.usecases.host.views import rescue_view
from workspace_realizer.usecases.views import work_product_view

__all__ = ["to_contract"]


def _conv(value: Any, kind: type[Any]) -> Any:
    return None if value is None else msgspec.convert(value, kind)


def _env(e: Any, aggregate: str) -> Envelope:
    # The envelope's keyword arguments, as servicekit builds them for every service.
    return envelope(e, aggregate=aggregate, company_id=e.tenant_id, service=SERVICE_NAME)


def _policy(e: Any) -> ExecutionWorkspacePolicy:
    return _conv(e.policy, ExecutionWorkspacePolicy) or ExecutionWorkspacePolicy()


def _checkout(state: str, e: Any) -> ManagedCheckout:
    return ManagedCheckout(
        state=state,  # type: ignore[arg-type]
        path=getattr(e, "path", None),
        error=getattr(e, "error", None),
        operation_id=e.operation_id,
    )


def _rescue(ref: RescueRefRecord | None) -> RescueRefView | None:
    return rescue_view(ref) if ref else None


_MAPPERS: dict[type[Any], Callable[[Any], Event]] = {
    P.Created: lambda e: we.ProjectCreated(
        **_env(e, "project"), name=e.name, execution_workspace_policy=_policy(e)
    ),
    P.Revised: lambda e: we.ProjectUpdated(
        **_env(e, "project"),
        name=e.name,
        execution_workspace_policy=_policy(e),
        changed_fields=list(e.changed_fields),
    ),
    P.Deleted: lambda e: we.ProjectDeleted(**_env(e, "project")),
    PW.Created: lambda e: we.ProjectWorkspaceCreated(
        **_env(e, "project_workspace"),
        project_id=e.project_id,
        name=e.name,
        cwd=e.cwd,
        repo_url=e.repo_url,
        repo_ref=e.repo_ref,
        is_primary=e.is_primary,
        setup_command=e.setup_command,
        cleanup_command=e.cleanup_command,
        runtime_config=_conv(e.runtime_config, RuntimeConfig),
        node_id=getattr(e, "node_id", None),
    ),
    PW.Revised: lambda e: we.ProjectWorkspaceUpdated(
        **_env(e, "project_workspace"),
        project_id=e.project_id,
        name=e.name,
        cwd=e.cwd,
        repo_url=e.repo_url,
        repo_ref=e.repo_ref,
        is_primary=e.is_primary,
        setup_command=e.setup_command,
        cleanup_command=e.cleanup_command,
        changed_fields=list(e.changed_fields),
    ),
    PW.RuntimeConfigChanged: lambda e: we.ProjectWorkspaceRuntimeConfigChanged(
        **_env(e, "project_workspace"),
        project_id=e.project_id,
        runtime_config=_conv(e.runtime_config, RuntimeConfig),
    ),
    PW.CheckoutStarted: lambda e: we.ProjectWorkspaceCheckoutChanged(
        **_env(e, "project_workspace"),
        project_id=e.project_id,
        managed_checkout=_checkout("cloning", e),
    ),
    PW.CheckoutReady: lambda e: we.ProjectWorkspaceCheckoutChanged(
        **_env(e, "project_workspace"),
        project_id=e.project_id,
        managed_checkout=_checkout("ready", e),
    ),
    PW.CheckoutFailed: lambda e: we.ProjectWorkspaceCheckoutChanged(
        **_env(e, "project_workspace"),
        project_id=e.project_id,
        managed_checkout=_checkout("failed", e),
    ),
    PW.Moved: lambda e: we.ProjectWorkspaceMoved(
        **_env(e, "project_workspace"),
        project_id=e.project_id,
        from_node=e.from_node,
        to_node=e.to_node,
    ),
    PW.Deleted: lambda e: we.ProjectWorkspaceDeleted(
        **_env(e, "project_workspace"), project_id=e.project_id
    ),
    I.Created: lambda e: we.IssueCreated(
        **_env(e, "issue"),
        project_id=e.project_id,
        identifier=e.identifier,
        title=e.title,
        description=e.description,
        priority=e.priority,
        parent_id=e.parent_id,
        project_workspace_id=e.project_workspace_id,
        execution_workspace_settings=_conv(e.settings, ExecutionWorkspaceSettings),
        status=e.status,
        assignee_agent_id=e.assignee_agent_id,
    ),
    I.Revised: lambda e: we.IssueUpdated(
        **_env(e, "issue"),
        project_id=e.project_id,
        identifier=e.identifier,
        title=e.title,
        description=e.description,
        priority=e.priority,
        parent_id=e.parent_id,
        project_workspace_id=e.project_workspace_id,
        execution_workspace_settings=_conv(e.settings, ExecutionWorkspaceSettings),
        changed_fields=list(e.changed_fields),
    ),
    I.StatusChanged: lambda e: we.IssueStatusChanged(
        **_env(e, "issue"),
        from_status=e.previous,
        to_status=e.status,
        is_terminal=e.status in TERMINAL_STATUSES,
    ),
    I.Assigned: lambda e: we.IssueAssigned(
        **_env(e, "issue"), assignee_agent_id=e.agent_id, previous_assignee_agent_id=e.previous
    ),
    I.WorkspaceLinked: lambda e: we.IssueWorkspaceLinked(
        **_env(e, "issue"),
        execution_workspace_id=e.workspace_id,
        previous_execution_workspace_id=e.previous,
    ),
    I.Commented: lambda e: we.IssueCommented(**_env(e, "issue"), comment=e.comment),
    I.WorkProductAdded: lambda e: we.IssueWorkProductAdded(
        **_env(e, "issue"),
        work_product=work_product_view(e.tenant_id, str(e.originator_id), e.product),
    ),
    I.Deleted: lambda e: we.IssueDeleted(**_env(e, "issue"), identifier=e.identifier),
    W.Realized: lambda e: ee.WorkspaceRealized(
        **_env(e, "workspace"),
        project_id=e.project_id,
        project_workspace_id=e.project_workspace_id,
        source_issue_id=e.source_issue_id,
        mode=e.mode,
        strategy_type=e.strategy_type,
        provider_type=e.provider_type,
        provider_ref=e.provider_ref,
        name=e.name,
        status="active",
        cwd=e.cwd,
        repo_url=e.repo_url,
        base_ref=e.base_ref,
        base_sha=e.base_ref_sha,
        branch_name=e.branch_name,
        node_id=e.node_id,
        created_worktree=e.created_worktree,
        config=_conv(e.config, ExecutionWorkspaceConfig) if e.config else None,
        operation_id=e.operation_id,
        warnings=list(e.warnings),
    ),
    W.Reused: lambda e: ee.WorkspaceReused(
        **_env(e, "workspace"),
        issue_id=e.issue_id,
        rebuilt=e.rebuilt,
        last_used_at=e.at,
        warnings=list(e.warnings),
    ),
    W.StatusChanged: lambda e: ee.WorkspaceStatusChanged(
        **_env(e, "workspace"),
        from_status=e.previous,
        to_status=e.status,
        lifecycle_generation=e.generation,
    ),
    L.ArchiveStarted: lambda e: ee.WorkspaceArchiveStarted(
        **_env(e, "workspace"), lifecycle_generation=e.generation, trigger=e.trigger
    ),
    L.Archived: lambda e: ee.WorkspaceArchived(
        **_env(e, "workspace"),
        lifecycle_generation=e.generation,
        closed_at=e.at,
        trigger=e.trigger,
        rescue_ref=_rescue(e.rescue_ref),
        branch_name=e.branch_name,
        branch_deleted=e.branch_deleted,
        branch_kept_reason=e.branch_kept_reason,
        worktree_removed=e.worktree_removed,
        runtime_services_stopped=e.runtime_services_stopped,
        detached_issue_ids=list(e.detached_issue_ids),
        cleanup_warnings=list(e.cleanup_warnings),
        operation_id=e.operation_id,
    ),
    L.CleanupFailed: lambda e: ee.WorkspaceCleanupFailed(
        **_env(e, "workspace"),
        lifecycle_generation=e.generation,
        cleanup_reason=e.error,
        rescue_ref=_rescue(e.rescue_ref),
        operation_id=e.operation_id,
    ),
    L.Reopened: lambda e: ee.WorkspaceReopened(
        **_env(e, "workspace"),
        lifecycle_generation=e.generation,
        cwd=e.cwd,
        branch_name=e.branch_name,
        restored_from=_rescue(e.restored_from),
        operation_id=e.operation_id,
    ),
    W.Moved: lambda e: ee.WorkspaceMoved(
        **_env(e, "workspace"),
        from_node=e.from_node,
        to_node=e.to_node,
        cwd=e.cwd,
        branch_name=e.branch_name,
        lifecycle_generation=e.generation,
        rescue_ref=_rescue(e.rescue_ref),
        operation_id=e.operation_id,
    ),
    L.ReopenFailed: lambda e: ee.WorkspaceReopenFailed(
        **_env(e, "workspace"),
        lifecycle_generation=e.generation,
        error=e.error,
        operation_id=e.operation_id,
    ),
    W.ConfigChanged: lambda e: ee.WorkspaceConfigChanged(
        **_env(e, "workspace"),
        config=_conv(e.config, ExecutionWorkspaceConfig) if e.config else None,
        changed_keys=list(e.changed_keys),
    ),
    W.Renamed: lambda e: ee.WorkspaceRenamed(**_env(e, "workspace"), name=e.name),
    W.CleanupScheduled: lambda e: ee.WorkspaceCleanupScheduled(
        **_env(e, "workspace"), cleanup_eligible_at=e.at
    ),
    W.BranchReconciled: lambda e: ee.WorkspaceBranchReconciled(
        **_env(e, "workspace"),
        mode=e.mode,
        inspection=msgspec.convert(e.inspection, BranchInspection),
        branch_name=e.branch_name,
        name=e.name,
        rescue_ref=_rescue(e.rescue_ref),
    ),
}


to_contract = ContractMap(_MAPPERS)
"""The public event (with its envelope) for a stored event of the realizer, or None when it
stays private."""
