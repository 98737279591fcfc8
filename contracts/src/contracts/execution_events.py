"""Public events of execution workspaces (aggregate ``workspace``, owner: workspace-realizer).

One fact per event, past tense, with the envelope. ``lifecycleGeneration`` is carried wherever a
late consumer must tell one life of a workspace from the next (archive and reopen bump it).
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from contracts.base import Event
from contracts.execution_views import (
    BranchInspection,
    ReconcileMode,
    RescueRefView,
    WorkspaceMode,
    WorkspaceStatus,
)
from contracts.workspace_config import ExecutionWorkspaceConfig, StrategyType

__all__ = [
    "WorkspaceArchiveStarted",
    "WorkspaceArchived",
    "WorkspaceBranchReconciled",
    "WorkspaceCleanupFailed",
    "WorkspaceCleanupScheduled",
    "WorkspaceConfigChanged",
    "WorkspaceMoved",
    "WorkspaceRealized",
    "WorkspaceRenamed",
    "WorkspaceReopenFailed",
    "WorkspaceReopened",
    "WorkspaceReused",
    "WorkspaceStatusChanged",
]


class WorkspaceRealized(Event, tag="workspace.realized.v1", frozen=True, kw_only=True):
    """A new execution workspace exists on ``nodeId`` for ``sourceIssueId``.

    With the project workspace's runtime config (from ``project_workspace.*`` events) and
    ``config`` here, the supervisor knows the workspace's effective runtime config, cwd and node.
    """

    project_id: str
    project_workspace_id: str | None
    source_issue_id: str | None
    mode: WorkspaceMode
    strategy_type: StrategyType
    provider_type: str
    provider_ref: str | None
    name: str
    status: WorkspaceStatus
    cwd: str | None
    repo_url: str | None
    base_ref: str | None
    base_sha: str | None = None
    branch_name: str | None
    node_id: str
    created_worktree: bool = False
    """A worktree was created now (false: an existing checkout was attached, e.g. shared)."""
    config: ExecutionWorkspaceConfig | None = None
    lifecycle_generation: int = 0
    operation_id: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)


class WorkspaceReused(Event, tag="workspace.reused.v1", frozen=True, kw_only=True):
    """An open workspace was handed to an issue (or a run) again; ``lastUsedAt`` moved."""

    issue_id: str | None
    rebuilt: bool = False
    """Its worktree had gone missing and was rebuilt (provision ran again, DECISIONS 1)."""
    last_used_at: datetime
    warnings: list[str] = msgspec.field(default_factory=list)


class WorkspaceStatusChanged(Event, tag="workspace.status_changed.v1", frozen=True, kw_only=True):
    """The status moved between ``active``, ``idle`` and ``in_review`` (closing and reopening
    have their own events, which carry the new status)."""

    from_status: WorkspaceStatus
    to_status: WorkspaceStatus
    lifecycle_generation: int


class WorkspaceArchiveStarted(Event, tag="workspace.archive_started.v1", frozen=True, kw_only=True):
    """An archive began (ARCHITECTURE §4.4): the workspace is closing at ``lifecycleGeneration``.

    Until ``workspace.archived.v1`` or ``workspace.cleanup_failed.v1`` at the same generation, the
    supervisor and the controller refuse new starts and runs in it.
    """

    lifecycle_generation: int
    trigger: str = "manual"


class WorkspaceArchived(Event, tag="workspace.archived.v1", frozen=True, kw_only=True):
    """The workspace was archived and its cleanup verified on disk (DECISIONS 3, 4).

    ``rescueRef`` holds what would otherwise have been lost; the branch was deleted only when
    allowed, else ``branchKeptReason`` says why it was kept.
    """

    lifecycle_generation: int
    closed_at: datetime
    trigger: str = "manual"
    """``manual`` (PATCH or command) or ``issue_terminal`` (the reaper)."""
    rescue_ref: RescueRefView | None = None
    branch_name: str | None = None
    branch_deleted: bool = False
    branch_kept_reason: str | None = None
    worktree_removed: bool = False
    runtime_services_stopped: int = 0
    detached_issue_ids: list[str] = msgspec.field(default_factory=list)
    cleanup_warnings: list[str] = msgspec.field(default_factory=list)
    operation_id: str | None = None


class WorkspaceCleanupFailed(Event, tag="workspace.cleanup_failed.v1", frozen=True, kw_only=True):
    """Archive ran but cleanup could not be verified; status ``cleanup_failed``, the reaper
    retries."""

    lifecycle_generation: int
    cleanup_reason: str
    rescue_ref: RescueRefView | None = None
    operation_id: str | None = None


class WorkspaceReopened(Event, tag="workspace.reopened.v1", frozen=True, kw_only=True):
    """A closed workspace was rebuilt on its branch and is ``active`` again (DECISIONS 12)."""

    lifecycle_generation: int
    cwd: str | None
    branch_name: str | None
    restored_from: RescueRefView | None = None
    """The rescue commit whose changes were restored as uncommitted files."""
    operation_id: str | None = None


class WorkspaceMoved(Event, tag="workspace.moved.v1", frozen=True, kw_only=True):
    """A drain moved the workspace to ``toNode``: its worktree was rebuilt there at ``cwd`` on
    the same branch and commit, with its uncommitted and untracked files (docs/scale-out.md,
    "Draining a node")."""

    from_node: str | None
    to_node: str
    cwd: str | None
    branch_name: str | None
    lifecycle_generation: int
    rescue_ref: RescueRefView | None = None
    """The rescue commit, pushed to the project's remote, that carried its work."""
    operation_id: str | None = None


class WorkspaceReopenFailed(Event, tag="workspace.reopen_failed.v1", frozen=True, kw_only=True):
    """A reopen failed; the workspace stays closed with ``cleanupReason: reopen_failed``."""

    lifecycle_generation: int
    error: str
    operation_id: str | None = None


class WorkspaceBranchReconciled(
    Event, tag="workspace.branch_reconciled.v1", frozen=True, kw_only=True
):
    """The recorded branch was reconciled with the checked-out one (reference §4.3)."""

    mode: ReconcileMode
    inspection: BranchInspection
    branch_name: str | None
    name: str
    rescue_ref: RescueRefView | None = None


class WorkspaceConfigChanged(Event, tag="workspace.config_changed.v1", frozen=True, kw_only=True):
    """The workspace's own config changed: the whole config after the change (``None``: none)."""

    config: ExecutionWorkspaceConfig | None
    changed_keys: list[str] = msgspec.field(default_factory=list)


class WorkspaceRenamed(Event, tag="workspace.renamed.v1", frozen=True, kw_only=True):
    """The workspace's display name changed."""

    name: str


class WorkspaceCleanupScheduled(
    Event, tag="workspace.cleanup_scheduled.v1", frozen=True, kw_only=True
):
    """``cleanupEligibleAt`` was set (``None``: cleared)."""

    cleanup_eligible_at: datetime | None
