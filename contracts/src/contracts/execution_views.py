"""Read shapes of execution workspaces, their close readiness, operations, audit and history.

API.md "Execution workspaces"; reference §1.5, §1.11, §3.4, §5.8. List rows carry no delivery
state and no excerpts (ARCHITECTURE §2 Size); the detail adds them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from contracts.base import Actor, Struct
from contracts.workspace_config import ExecutionWorkspaceConfig, StopPolicy, StrategyType

__all__ = [
    "WORKSPACE_STATUSES",
    "BranchInspection",
    "CloseAction",
    "CloseReadiness",
    "CloseReadinessState",
    "DeliveryState",
    "ExecutionWorkspace",
    "ExecutionWorkspaceRow",
    "ExecutionWorkspaceSummary",
    "GitFacts",
    "LinkedIssue",
    "OperationSource",
    "RealizeResult",
    "ReconcileMode",
    "ReconcileResult",
    "RescueRefView",
    "RuntimeProvisioning",
    "RuntimeServiceBrief",
    "WorkspaceEventRow",
    "WorkspaceHistory",
    "WorkspaceMode",
    "WorkspaceOperation",
    "WorkspaceOperationDetail",
    "WorkspaceOperationOutput",
    "WorkspaceOperationStatus",
    "WorkspaceStatus",
]

WorkspaceStatus = Literal["active", "idle", "in_review", "archived", "cleanup_failed"]
WORKSPACE_STATUSES: tuple[str, ...] = ("active", "idle", "in_review", "archived", "cleanup_failed")
WorkspaceMode = Literal[
    "shared_workspace", "isolated_workspace", "operator_branch", "adapter_managed", "cloud_sandbox"
]
ProviderType = Literal["local_fs", "git_worktree", "adapter_managed", "cloud_sandbox"]
DeliveryState = Literal[
    "merged_via_pr", "merged_by_ancestry", "merged_by_squash", "unmerged", "unknown"
]
CloseReadinessState = Literal["ready", "ready_with_warnings", "blocked"]
WorkspaceOperationStatus = Literal["running", "succeeded", "failed", "skipped"]
OperationSource = Literal["realizer", "supervisor"]
ReconcileMode = Literal["forward", "override", "quarantine_restore"]


class RescueRefView(Struct, frozen=True, kw_only=True):
    """A rescue commit (DECISIONS 3): ``refs/clipyard/rescue/<workspaceId>/<generation>``."""

    ref: str
    sha: str
    file_count: int
    generation: int
    created_at: datetime


class RuntimeProvisioning(Struct, frozen=True, kw_only=True):
    """The lazy runtime-provision state (DECISIONS 1); the supervisor's fact."""

    state: Literal["deferred", "provisioned", "failed", "none"] = "none"
    at: datetime | None = None
    operation_id: str | None = None


class RuntimeServiceBrief(Struct, frozen=True, kw_only=True):
    """A runtime service as a workspace shows it (the supervisor's fact; extended additively).

    ``status``: ``provisioning | starting | running | stopped | failed``; ``healthStatus``:
    ``unknown | healthy | unhealthy``; ``desiredState``: ``running | stopped | manual`` of its
    service index. A service that ended by itself carries ``exitCode`` or ``exitSignal`` and the
    last output (DECISIONS 8).
    """

    id: str
    service_name: str
    status: str
    desired_state: str | None = None
    port: int | None = None
    url: str | None = None
    health_status: str | None = None
    company_id: str | None = None
    execution_workspace_id: str | None = None
    project_workspace_id: str | None = None
    service_index: int | None = None
    workspace_command_id: str | None = None
    lifecycle: str | None = None
    """``shared | ephemeral``."""
    scope_type: str | None = None
    """``project_workspace | execution_workspace | agent | run``."""
    scope_id: str | None = None
    reuse_key: str | None = None
    command: str | None = None
    cwd: str | None = None
    provider: str = "local_process"
    pid: int | None = None
    stop_policy: StopPolicy | None = None
    lease_run_ids: list[str] = msgspec.field(default_factory=list)
    started_by_run_id: str | None = None
    owner_agent_id: str | None = None
    started_at: datetime | None = None
    stopped_at: datetime | None = None
    last_used_at: datetime | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    last_error: str | None = None
    last_output: str | None = None


class ExecutionWorkspaceRow(Struct, frozen=True, kw_only=True):
    """An execution workspace as list endpoints show it (no git is run for a row)."""

    id: str
    company_id: str
    project_id: str
    project_workspace_id: str | None
    source_issue_id: str | None
    mode: WorkspaceMode
    strategy_type: StrategyType
    provider_type: ProviderType
    provider_ref: str | None
    name: str
    status: WorkspaceStatus
    cwd: str | None
    repo_url: str | None
    base_ref: str | None
    branch_name: str | None
    node_id: str
    config: ExecutionWorkspaceConfig | None = None
    linked_issue_ids: list[str] = msgspec.field(default_factory=list)
    lifecycle_generation: int = 0
    opened_at: datetime
    last_used_at: datetime
    closed_at: datetime | None = None
    cleanup_eligible_at: datetime | None = None
    cleanup_reason: str | None = None
    rescue_refs: list[RescueRefView] = msgspec.field(default_factory=list)
    derived_from_execution_workspace_id: str | None = None
    created_at: datetime
    updated_at: datetime
    unconfined: bool = False
    """Its company is ``hostTrusted``: its services, jobs and commands run unconfined on the host
    (docs/design/isolation.md)."""
    node_state: Literal["ready", "unreachable"] = "ready"
    """Whether its worker node (``nodeId``) answers: ``unreachable`` while it is down (the
    detail is then shown as recorded: ``deliveryState`` ``unknown``, services as last known),
    and nothing on it can be changed until it is back."""


class ExecutionWorkspace(ExecutionWorkspaceRow, frozen=True, kw_only=True):
    """``GET /api/execution-workspaces/{id}``: the row plus delivery and runtime facts."""

    delivery_state: DeliveryState = "unknown"
    commits_ahead: int | None = None
    runtime_provisioning: RuntimeProvisioning = msgspec.field(default_factory=RuntimeProvisioning)
    runtime_services: list[RuntimeServiceBrief] = msgspec.field(default_factory=list)


class ExecutionWorkspaceSummary(Struct, frozen=True, kw_only=True):
    """A row of ``?summary=true``."""

    id: str
    name: str
    mode: WorkspaceMode
    status: WorkspaceStatus
    cwd: str | None
    branch_name: str | None
    project_workspace_id: str | None
    last_used_at: datetime


class GitFacts(Struct, frozen=True, kw_only=True):
    """Git state of a worktree at close-readiness time."""

    branch: str | None = None
    head_sha: str | None = None
    dirty_count: int = 0
    untracked_count: int = 0
    ahead: int | None = None
    behind: int | None = None


class CloseAction(Struct, frozen=True, kw_only=True):
    """A planned close step (reference §2 ``ExecutionWorkspaceCloseActionKind``, plus
    ``write_rescue_ref``)."""

    kind: str
    label: str
    description: str | None = None
    command: str | None = None


class LinkedIssue(Struct, frozen=True, kw_only=True):
    """An issue linked to the workspace."""

    id: str
    identifier: str
    title: str
    status: str
    is_terminal: bool


class CloseReadiness(Struct, frozen=True, kw_only=True):
    """``GET .../close-readiness``; also the gate of archive (409 ``close_blocked``)."""

    workspace_id: str
    state: CloseReadinessState
    blocking_reasons: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)
    planned_actions: list[CloseAction] = msgspec.field(default_factory=list)
    delivery_state: DeliveryState = "unknown"
    commits_ahead: int | None = None
    git: GitFacts | None = None
    linked_issues: list[LinkedIssue] = msgspec.field(default_factory=list)
    runtime_services: list[RuntimeServiceBrief] = msgspec.field(default_factory=list)
    is_shared_workspace: bool = False
    is_destructive_close_allowed: bool = True


class WorkspaceOperation(Struct, frozen=True, kw_only=True):
    """A git or shell step against a workspace (a list row: no excerpts)."""

    id: str
    company_id: str
    execution_workspace_id: str | None
    phase: str
    """``worktree_prepare``, ``workspace_provision``, ``workspace_teardown``, ``worktree_cleanup``,
    ``managed_clone``, ``workspace_rescue``, ``workspace_restore``, ``branch_reconcile``, …"""
    command: str
    cwd: str
    status: WorkspaceOperationStatus
    exit_code: int | None = None
    started_at: datetime
    finished_at: datetime | None = None
    run_id: str | None = None
    issue_id: str | None = None
    operation_id: str | None = None
    """The long operation (``GET /api/operations/{id}``) this step belongs to."""
    source: OperationSource
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class WorkspaceOperationDetail(WorkspaceOperation, frozen=True, kw_only=True):
    """``GET /api/workspace-operations/{id}``: the row plus the last 64 KiB of each stream."""

    stdout_excerpt: str = ""
    stderr_excerpt: str = ""
    truncated: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0


class WorkspaceOperationOutput(Struct, frozen=True, kw_only=True):
    """A byte range of one stream's stored output (up to 256 KiB)."""

    data: bytes
    offset: int
    total_bytes: int


class RealizeResult(Struct, frozen=True, kw_only=True):
    """``{workspace, created, warnings}``: 201 when created, 200 when reused."""

    workspace: ExecutionWorkspace
    created: bool
    warnings: list[str] = msgspec.field(default_factory=list)


class BranchInspection(Struct, frozen=True, kw_only=True):
    """What a branch reconcile found (reference §4.3)."""

    worktree_path: str | None = None
    repo_root: str | None = None
    from_branch: str | None = None
    to_branch: str | None = None
    from_sha: str | None = None
    to_sha: str | None = None
    ancestry_verdict: Literal["ancestor", "diverged", "unknown"] = "unknown"
    cleanliness: Literal["clean", "dirty", "unknown"] = "unknown"
    status_entry_count: int = 0
    plain_language_reason: str | None = None


class ReconcileResult(Struct, frozen=True, kw_only=True):
    """``POST .../reconcile-branch`` → ``{workspace, inspection, rescueRef?}``."""

    workspace: ExecutionWorkspace
    inspection: BranchInspection
    rescue_ref: RescueRefView | None = None


class WorkspaceEventRow(Struct, frozen=True, kw_only=True):
    """One event of a workspace's audit trail (its own, its runtime services', jobs', runs')."""

    event_id: str
    type: str
    """Its public type, or the type derived for an event never published
    (:mod:`contracts.event_types`)."""
    source: str
    """The service that stored it (``realizer``, ``supervisor``, ``controller``)."""
    aggregate_id: str
    aggregate_version: int
    occurred_at: datetime
    actor: Actor | None = None
    run_id: str | None = None
    reason: str | None = None
    data: dict[str, Any] = msgspec.field(default_factory=dict)
    label: str = ""
    """What a person reads for its type (``Workspace provisioned``)."""


class WorkspaceHistory(Struct, frozen=True, kw_only=True):
    """The workspace as it was after event ``version`` (the last one at or before ``at``)."""

    version: int
    occurred_at: datetime
    workspace: ExecutionWorkspaceRow
