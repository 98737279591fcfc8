"""Bus commands and queries of execution workspaces, their operations, audit and history.

Served by the workspace-realizer (operations and events also by the supervisor, each for what it
stores) on the subjects of :mod:`contracts.workspace_subjects`. Commands that touch the host end
with the node token. Each carries the principal; the realizer checks the company. Long work
(realize, archive, reopen) answers ``accepted {operationId}`` past the request's deadline, and the
operation's ``result`` is the view named here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from contracts.base import Command, Query, Struct
from contracts.execution_views import ReconcileMode, WorkspaceStatus
from contracts.workspace_config import ExecutionWorkspaceConfigPatch, IssueWorkspaceMode

# Inbound times must carry a zone (a naive one is ambiguous, and the reaper compares them
# with aware times).
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]

__all__ = [
    "ArchiveWorkspace",
    "GetCloseReadiness",
    "GetExecutionWorkspace",
    "GetWorkspaceEvents",
    "GetWorkspaceHistory",
    "GetWorkspaceOperation",
    "GetWorkspaceOperationOutput",
    "ListExecutionWorkspaceSummaries",
    "ListExecutionWorkspaces",
    "ListWorkspaceOperations",
    "RealizeWorkspace",
    "ReconcileBranch",
    "ReopenWorkspace",
    "StopWorkspaceRuntimeServices",
    "StopWorkspaceRuntimeServicesResult",
    "UpdateExecutionWorkspace",
    "WorkspaceFilters",
]


class RealizeWorkspace(Command, tag="workspace.realize.v1", frozen=True, kw_only=True):
    """Realize (or reuse) the issue's execution workspace → ``RealizeResult`` (host-bound).

    ``mode`` absent: the issue's settings, else the project's default. ``executionWorkspaceId``
    with ``reuse_existing``. The controller sends it at ``workspace_resolution`` with the run in
    ``principal.runId`` and the agent in ``agentId`` (branch templates, ``agent_default``).
    """

    issue_id: str
    mode: IssueWorkspaceMode | None = None
    execution_workspace_id: str | None = None
    agent_id: str | None = None
    require_isolation: bool = False
    """An untrusted agent's run (DECISIONS 11): unless the resolved mode gives the issue its own
    isolated worktree, refuse with 422 ``low_trust_violation`` before anything is done."""


class UpdateExecutionWorkspace(Command, tag="workspace.update.v1", frozen=True, kw_only=True):
    """``PATCH /api/execution-workspaces/{id}`` → ``ExecutionWorkspace`` (host-bound).

    ``status: archived`` runs the archive saga (as :class:`ArchiveWorkspace`); ``active`` on a
    closed workspace reopens it (as :class:`ReopenWorkspace`); other statuses are set as they are.
    ``config`` is merged key by key and is board-only (403 for agents).
    """

    workspace_id: str
    name: str | msgspec.UnsetType = msgspec.UNSET
    status: WorkspaceStatus | msgspec.UnsetType = msgspec.UNSET
    config: ExecutionWorkspaceConfigPatch | msgspec.UnsetType = msgspec.UNSET
    cleanup_eligible_at: AwareDatetime | msgspec.UnsetType | None = msgspec.UNSET


class ArchiveWorkspace(Command, tag="workspace.archive.v1", frozen=True, kw_only=True):
    """Archive: the saga of ARCHITECTURE §4.4 → ``ExecutionWorkspace`` (host-bound).

    409 ``close_blocked`` (details ``closeReadiness``) when close readiness is blocked; 409
    ``reopen_pending`` under the reopen fence; 409 ``lifecycle_conflict`` when
    ``expectedGeneration`` is given and differs.
    """

    workspace_id: str
    expected_generation: int | None = None


class ReopenWorkspace(Command, tag="workspace.reopen.v1", frozen=True, kw_only=True):
    """Reopen a closed workspace (DECISIONS 12) → ``ExecutionWorkspace`` (host-bound); 409
    ``not_reopenable`` when it is open or cannot be rebuilt."""

    workspace_id: str
    expected_generation: int | None = None


class ReconcileBranch(Command, tag="workspace.reconcile_branch.v1", frozen=True, kw_only=True):
    """Reconcile the recorded branch with the checked-out one → ``ReconcileResult`` (host-bound;
    board only; ``override`` needs a reason; refusals are 422 ``branch_reconcile_refused``)."""

    workspace_id: str
    mode: ReconcileMode
    reason: str | None = None


class GetExecutionWorkspace(Query, tag="workspace.get.v1", frozen=True, kw_only=True):
    """Read one workspace with its delivery state → ``ExecutionWorkspace``."""

    workspace_id: str
    delivery: bool = True
    """False: the workspace as recorded, without asking git (on its node) for its delivery
    state: for a caller that needs the record only (its node, config, company)."""


class WorkspaceFilters(Struct, frozen=True, kw_only=True):
    """The list filters of API.md; empty values select all."""

    project_id: str | None = None
    project_workspace_id: str | None = None
    issue_id: str | None = None
    """Matches ``sourceIssueId``."""
    statuses: list[WorkspaceStatus] = msgspec.field(default_factory=list)
    reuse_eligible: bool = False
    """Open (``active|idle|in_review``), not closed, and not ``shared_workspace``."""


class ListExecutionWorkspaces(Query, tag="workspace.list.v1", frozen=True, kw_only=True):
    """A company's workspaces by ``lastUsedAt`` desc → ``Page[ExecutionWorkspaceRow]``."""

    company_id: str
    filters: WorkspaceFilters = msgspec.field(default_factory=WorkspaceFilters)
    limit: int = 50
    offset: int = 0


class ListExecutionWorkspaceSummaries(
    Query, tag="workspace.list_summaries.v1", frozen=True, kw_only=True
):
    """As :class:`ListExecutionWorkspaces` → ``Page[ExecutionWorkspaceSummary]``."""

    company_id: str
    filters: WorkspaceFilters = msgspec.field(default_factory=WorkspaceFilters)
    limit: int = 50
    offset: int = 0


class GetCloseReadiness(Query, tag="workspace.get_close_readiness.v1", frozen=True, kw_only=True):
    """What archiving would do and whether it may → ``CloseReadiness``."""

    workspace_id: str


class ListWorkspaceOperations(Query, tag="workspace_operation.list.v1", frozen=True, kw_only=True):
    """A workspace's operations stored by the answering service, oldest first →
    ``Page[WorkspaceOperation]`` (``ws.qry.<service>.workspace_operations``)."""

    workspace_id: str
    limit: int = 50
    offset: int = 0


class GetWorkspaceOperation(Query, tag="workspace_operation.get.v1", frozen=True, kw_only=True):
    """One operation with its excerpts → ``WorkspaceOperationDetail``; ``not_found`` when the
    answering service did not record it."""

    operation_id: str


class GetWorkspaceOperationOutput(
    Query, tag="workspace_operation.get_output.v1", frozen=True, kw_only=True
):
    """A byte range of one stream → ``WorkspaceOperationOutput`` (``length`` up to 256 KiB)."""

    operation_id: str
    stream: Literal["stdout", "stderr"] = "stdout"
    offset: int = 0
    length: int = 256 * 1024


class GetWorkspaceEvents(Query, tag="workspace.get_events.v1", frozen=True, kw_only=True):
    """The workspace's audit trail as the answering service stores it, oldest first →
    ``Page[WorkspaceEventRow]`` (``ws.qry.<service>.workspace_events``)."""

    workspace_id: str
    limit: int = 50
    offset: int = 0
    types: list[str] | None = None
    """Only the events of these types, types without version or aggregates
    (:mod:`contracts.event_filters`; None: every event); ``offset`` and the total then count
    those only."""


class GetWorkspaceHistory(Query, tag="workspace.get_history.v1", frozen=True, kw_only=True):
    """The workspace after event ``version``, or as it was at ``at`` (exactly one is given) →
    ``WorkspaceHistory``; ``not_found`` before its first event."""

    workspace_id: str
    version: int | None = None
    at: AwareDatetime | None = None


class StopWorkspaceRuntimeServices(
    Command, tag="runtime_service.stop_workspace.v1", frozen=True, kw_only=True
):
    """The archive saga asks the supervisor to stop every runtime service of a workspace
    (``ws.cmd.runtime_service.stop_workspace.<node>``) → ``StopWorkspaceRuntimeServicesResult``."""

    workspace_id: str
    lifecycle_generation: int | None = None
    reason: str | None = None
    """Why, as the stopped services record it (default: the workspace is archived)."""


class StopWorkspaceRuntimeServicesResult(Struct, frozen=True, kw_only=True):
    """How many services were stopped; ``failed`` names those still running (archive then fails
    with ``cleanup_failed``)."""

    workspace_id: str
    stopped: int
    failed: list[str] = msgspec.field(default_factory=list)
    stopped_commands: list[str] = msgspec.field(default_factory=list)
    """The workspace command ids of the services stopped (a drain starts them again)."""
