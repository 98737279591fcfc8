"""Inbound HTTP bodies of projects, project workspaces, issues and execution workspaces (API.md).

Strict: unknown fields (nested ones too) answer 400. ``PATCH`` bodies use ``UNSET``: an absent
field stays as it is; for nullable fields ``null`` clears. Responses are the views of
:mod:`contracts.workspace_views` and :mod:`contracts.execution_views`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

from contracts.execution_views import ReconcileMode, WorkspaceStatus
from contracts.http import EntityId, Name, StrictBody
from contracts.workspace_config import IssueWorkspaceMode
from contracts.workspace_inputs import (
    ExecutionWorkspaceConfigPatchIn,
    ExecutionWorkspacePolicyIn,
    ExecutionWorkspaceSettingsIn,
    RuntimeConfigIn,
)
from contracts.workspace_views import IssuePriority, IssueStatus, WorkProductType

# Inbound times must carry a zone (a naive one is ambiguous, and the reaper compares them
# with aware times).
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]

__all__ = [
    "CreateIssueBody",
    "CreateProjectBody",
    "CreateProjectWorkspaceBody",
    "CreateWorkProductBody",
    "RealizeIssueWorkspaceBody",
    "ReconcileBranchBody",
    "UpdateExecutionWorkspaceBody",
    "UpdateIssueBody",
    "UpdateProjectBody",
    "UpdateProjectWorkspaceBody",
]


class CreateProjectBody(StrictBody, frozen=True, kw_only=True):
    """``POST /api/companies/{companyId}/projects``."""

    name: Name
    execution_workspace_policy: ExecutionWorkspacePolicyIn | None = None
    """Absent: ``{enabled: true, defaultMode: shared_workspace, allowIssueOverride: true}``."""


class UpdateProjectBody(StrictBody, frozen=True, kw_only=True):
    """``PATCH /api/projects/{projectId}``; the policy is replaced as a whole."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    execution_workspace_policy: ExecutionWorkspacePolicyIn | msgspec.UnsetType = msgspec.UNSET


class CreateProjectWorkspaceBody(StrictBody, frozen=True, kw_only=True):
    """``POST /api/projects/{projectId}/workspaces``: ``cwd`` or ``repoUrl`` (else 422)."""

    name: Name
    cwd: str | None = None
    repo_url: str | None = None
    repo_ref: str | None = None
    is_primary: bool = False
    setup_command: str | None = None
    cleanup_command: str | None = None
    runtime_config: RuntimeConfigIn | None = None
    node_id: str | None = None
    """The worker node whose host has ``cwd``, or where a repo-only one is cloned; it stays
    there. Default: the only ready node; with several, required for a ``cwd``, and the least
    loaded for a repo-only one."""


class UpdateProjectWorkspaceBody(StrictBody, frozen=True, kw_only=True):
    """``PATCH /api/projects/{projectId}/workspaces/{workspaceId}``."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    cwd: str | msgspec.UnsetType | None = msgspec.UNSET
    repo_url: str | msgspec.UnsetType | None = msgspec.UNSET
    repo_ref: str | msgspec.UnsetType | None = msgspec.UNSET
    is_primary: bool | msgspec.UnsetType = msgspec.UNSET
    setup_command: str | msgspec.UnsetType | None = msgspec.UNSET
    cleanup_command: str | msgspec.UnsetType | None = msgspec.UNSET
    runtime_config: RuntimeConfigIn | msgspec.UnsetType | None = msgspec.UNSET


class CreateIssueBody(StrictBody, frozen=True, kw_only=True):
    """``POST /api/companies/{companyId}/issues`` (Paperclip's ``description``, ``priority`` and
    ``comment`` are taken too; the comment is recorded as an event on the issue)."""

    title: Name
    project_id: EntityId
    identifier: str | None = None
    status: IssueStatus = "backlog"
    parent_id: EntityId | None = None
    assignee_agent_id: EntityId | None = None
    project_workspace_id: EntityId | None = None
    execution_workspace_settings: ExecutionWorkspaceSettingsIn | None = None
    description: str | None = None
    priority: IssuePriority | None = None
    comment: str | None = None


class UpdateIssueBody(StrictBody, frozen=True, kw_only=True):
    """``PATCH /api/issues/{issueId}``."""

    title: Name | msgspec.UnsetType = msgspec.UNSET
    status: IssueStatus | msgspec.UnsetType = msgspec.UNSET
    parent_id: EntityId | msgspec.UnsetType | None = msgspec.UNSET
    assignee_agent_id: EntityId | msgspec.UnsetType | None = msgspec.UNSET
    project_workspace_id: EntityId | msgspec.UnsetType | None = msgspec.UNSET
    execution_workspace_settings: ExecutionWorkspaceSettingsIn | msgspec.UnsetType | None = (
        msgspec.UNSET
    )
    description: str | msgspec.UnsetType | None = msgspec.UNSET
    priority: IssuePriority | msgspec.UnsetType | None = msgspec.UNSET
    comment: str | msgspec.UnsetType = msgspec.UNSET


class CreateWorkProductBody(StrictBody, frozen=True, kw_only=True):
    """``POST /api/issues/{issueId}/work-products``."""

    type: WorkProductType
    url: str | None = None
    external_id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None


class RealizeIssueWorkspaceBody(StrictBody, frozen=True, kw_only=True):
    """``POST /api/issues/{issueId}/execution-workspace``: realize (or reuse) it now."""

    mode: IssueWorkspaceMode | None = None
    execution_workspace_id: EntityId | None = None
    """The workspace to bind to with ``reuse_existing``."""


class UpdateExecutionWorkspaceBody(StrictBody, frozen=True, kw_only=True):
    """``PATCH /api/execution-workspaces/{id}``: ``status: archived`` archives; a closed workspace
    patched to ``active`` reopens; ``config`` is board-only and merged key by key."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    status: WorkspaceStatus | msgspec.UnsetType = msgspec.UNSET
    config: ExecutionWorkspaceConfigPatchIn | msgspec.UnsetType = msgspec.UNSET
    cleanup_eligible_at: AwareDatetime | msgspec.UnsetType | None = msgspec.UNSET


class ReconcileBranchBody(StrictBody, frozen=True, kw_only=True):
    """``POST /api/execution-workspaces/{id}/reconcile-branch`` (board only); ``override`` needs
    a ``reason``."""

    mode: ReconcileMode
    reason: str | None = None
