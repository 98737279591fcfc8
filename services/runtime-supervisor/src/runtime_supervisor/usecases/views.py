"""Records and aggregates → contract views: the runtime service brief (THE service view), the
runtime provisioning state, and workspace operation rows and details."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts import execution_views as ev
from runtime_supervisor.domain.service_record import stop_policy_of
from servicekit import workspace_audit

if TYPE_CHECKING:
    from runtime_supervisor.domain import (
        Provisioning,
        RuntimeTarget,
        ServiceRecord,
        SupervisorOperation,
    )

__all__ = [
    "operation_detail",
    "operation_row",
    "provisioning_view",
    "service_brief",
]


def service_brief(
    record: ServiceRecord, desired_state: str | None = None
) -> ev.RuntimeServiceBrief:
    """A runtime service instance as workspaces show it (``desired_state``: its service index's,
    when known)."""
    return ev.RuntimeServiceBrief(
        id=record.id,
        service_name=record.service_name,
        status=record.status,
        desired_state=desired_state,
        port=record.port,
        url=record.url,
        health_status=record.health_status,
        company_id=record.company_id,
        execution_workspace_id=record.execution_workspace_id,
        project_workspace_id=record.project_workspace_id,
        service_index=record.service_index,
        workspace_command_id=record.workspace_command_id,
        lifecycle=record.lifecycle,
        scope_type=record.scope_type,
        scope_id=record.scope_id,
        reuse_key=record.reuse_key,
        command=record.command,
        cwd=record.cwd,
        pid=record.pid,
        stop_policy=stop_policy_of(record.stop_policy),
        lease_run_ids=list(record.lease_run_ids),
        started_by_run_id=record.started_by_run_id,
        owner_agent_id=record.owner_agent_id,
        started_at=record.started_at,
        stopped_at=record.stopped_at,
        last_used_at=record.last_used_at,
        exit_code=record.exit_code,
        exit_signal=record.exit_signal,
        last_error=record.last_error,
        last_output=record.last_output,
    )


def provisioning_view(
    target: RuntimeTarget, provisioning: Provisioning | None
) -> ev.RuntimeProvisioning:
    """The lazy runtime-provision state of a target (DECISIONS 1): ``none`` without a command;
    ``provisioned`` / ``failed`` for its current checkout; else ``deferred`` (a run in progress
    included: its operation is named)."""
    current = (
        provisioning
        if provisioning is not None and provisioning.checkout_version == target.checkout_version
        else None
    )
    if current is not None and current.status == "succeeded":
        return ev.RuntimeProvisioning(
            state="provisioned", at=current.finished_at, operation_id=current.operation_id
        )
    if current is not None and current.status == "failed":
        return ev.RuntimeProvisioning(
            state="failed", at=current.finished_at, operation_id=current.operation_id
        )
    if not target.runtime_provision_command:
        return ev.RuntimeProvisioning(state="none")
    if current is not None:  # running now
        return ev.RuntimeProvisioning(
            state="deferred", at=current.started_at, operation_id=current.operation_id
        )
    return ev.RuntimeProvisioning(state="deferred")


def operation_row(operation: SupervisorOperation) -> ev.WorkspaceOperation:
    """A list row: no excerpts."""
    return workspace_audit.operation_row(operation, "supervisor")


def operation_detail(operation: SupervisorOperation) -> ev.WorkspaceOperationDetail:
    """The row plus the last 64 KiB of each stream."""
    return workspace_audit.operation_detail(operation, "supervisor")
