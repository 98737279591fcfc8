"""Typed records of the host part: what a realization, an archive, a reconcile and a host step
record, and the stored (camelCase) shapes of the plain data execution workspaces keep.

The stored shapes (:class:`WorkspaceConfig`, :class:`RescueRefRecord`,
:class:`ReconcileInspection`, :class:`CloseStep`) are ``TypedDict``: event attributes and
snapshots store them as the plain dicts they are at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from workspace_realizer.domain.documents import RuntimeConfigDocument

__all__ = [
    "ArchiveOutcome",
    "CloseStep",
    "OperationEnding",
    "OperationRecord",
    "ReconcileInspection",
    "ReconcileRecord",
    "RescueRefRecord",
    "StepFacts",
    "WorkspaceChanges",
    "WorkspaceConfig",
    "WorkspaceConfigPatch",
    "WorkspaceRealization",
]


class WorkspaceConfig(TypedDict, total=False):
    """An execution workspace's own commands and runtime override (``ExecutionWorkspaceConfig``)."""

    provisionCommand: str
    runtimeProvisionCommand: str
    teardownCommand: str
    cleanupCommand: str
    workspaceRuntime: RuntimeConfigDocument


class WorkspaceConfigPatch(TypedDict, total=False):
    """A change of :class:`WorkspaceConfig` key by key (``ExecutionWorkspaceConfigPatch``):
    an absent key stays, ``None`` clears it."""

    provisionCommand: str | None
    runtimeProvisionCommand: str | None
    teardownCommand: str | None
    cleanupCommand: str | None
    workspaceRuntime: RuntimeConfigDocument | None


class WorkspaceChanges(TypedDict, total=False):
    """A board's update of an execution workspace: the fields it sets (absent: unchanged)."""

    name: str
    status: str
    config: WorkspaceConfigPatch
    cleanup_eligible_at: datetime | None


class RescueRefRecord(TypedDict):
    """A rescue commit kept under ``refs/clipyard/rescue/...`` (DECISIONS 3), as stored."""

    ref: str
    sha: str
    fileCount: NotRequired[int]
    generation: NotRequired[int]
    createdAt: NotRequired[str]
    """ISO 8601."""


class ReconcileInspection(TypedDict):
    """What a branch reconcile found (``BranchInspection``), as stored."""

    worktreePath: str | None
    repoRoot: str | None
    fromBranch: str | None
    toBranch: str | None
    fromSha: str | None
    toSha: str | None
    ancestryVerdict: str
    cleanliness: str
    plainLanguageReason: str | None


class CloseStep(TypedDict):
    """A planned step of archiving a workspace (``CloseAction``)."""

    kind: str
    label: str
    command: str | None


@dataclass(frozen=True)
class WorkspaceRealization:
    """The facts of a newly realized execution workspace (the ``Realized`` event's, but ``at``).

    ``branch_created``: Clipyard created the branch (it may delete it).
    """

    workspace_id: str
    company_id: str
    project_id: str
    project_workspace_id: str | None
    source_issue_id: str
    mode: str
    strategy_type: str
    provider_type: str
    provider_ref: str | None
    name: str
    cwd: str | None
    repo_url: str | None
    base_ref: str | None
    base_ref_sha: str | None
    branch_name: str | None
    branch_created: bool
    created_worktree: bool
    node_id: str
    config: WorkspaceConfig
    operation_id: str | None
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ArchiveOutcome:
    """What a verified archive did (the ``Archived`` event's facts of the cleanup)."""

    trigger: str
    cleanup_reason: str | None
    rescue_ref: RescueRefRecord | None
    branch_deleted: bool
    branch_kept_reason: str | None
    worktree_removed: bool
    runtime_services_stopped: int
    detached_issue_ids: list[str]
    cleanup_warnings: list[str]
    operation_id: str | None


@dataclass(frozen=True)
class ReconcileRecord:
    """What a branch reconcile did on the host: the live branch, the evidence, the rescue."""

    to_branch: str | None
    inspection: ReconcileInspection
    rescue_ref: RescueRefRecord | None


StepFacts = dict[str, Any]
"""The adapter's own facts of a step (plain JSON: ``shell``, ``repoUrl``, ``timeoutSec``...)."""


class OperationRecord(TypedDict):
    """One host step, as :class:`~.operations.WorkspaceOperation` records it (``finished_at``
    None: it began and is ``running``)."""

    operation_ref: str
    company_id: str
    execution_workspace_id: str | None
    project_workspace_id: str | None
    issue_id: str | None
    operation_id: str | None
    heartbeat_run_id: str | None
    phase: str
    command: str
    cwd: str
    status: str
    exit_code: int | None
    started_at: datetime
    finished_at: datetime | None
    stdout_excerpt: str
    stderr_excerpt: str
    truncated: bool
    stdout_bytes: int
    stderr_bytes: int
    log_dir: str | None
    metadata: StepFacts
    """The adapter's own facts of the step (plain JSON), stored and shown as they are."""
    node_id: NotRequired[str]
    """The node whose host ran it."""


class OperationEnding(TypedDict):
    """How a step recorded ``running`` ended (``WorkspaceOperation.finish``)."""

    status: str
    exit_code: int | None
    finished_at: datetime
    stdout_excerpt: str
    stderr_excerpt: str
    truncated: bool
    stdout_bytes: int
    stderr_bytes: int
    metadata: StepFacts
