"""Bus commands and queries of projects, project workspaces, issues and work products.

Served by the workspace-realizer on the subjects of :mod:`contracts.workspace_subjects`. Each
carries the principal; the realizer checks that everything named belongs to
``principal.companyId`` (another company's resource answers ``not_found``). ``Update*`` fields
left ``UNSET`` stay as they are; ``None`` clears a nullable field. Replies: ``ok`` with the view
named on each class, ``error``, or ``accepted`` for long work (a managed clone).
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.base import Command, Query
from contracts.workspace_config import (
    ExecutionWorkspacePolicy,
    ExecutionWorkspaceSettings,
    RuntimeConfig,
)
from contracts.workspace_views import IssuePriority, IssueStatus, WorkProductType

__all__ = [
    "AddWorkProduct",
    "CreateIssue",
    "CreateProject",
    "CreateProjectWorkspace",
    "DeleteIssue",
    "DeleteProject",
    "DeleteProjectWorkspace",
    "GetIssue",
    "GetProject",
    "GetProjectWorkspace",
    "ListIssues",
    "ListProjectWorkspaces",
    "ListProjects",
    "ListWorkProducts",
    "UpdateIssue",
    "UpdateProject",
    "UpdateProjectWorkspace",
]


class CreateProject(Command, tag="project.create.v1", frozen=True, kw_only=True):
    """Create a project in ``companyId`` → ``Project``."""

    company_id: str
    name: str
    execution_workspace_policy: ExecutionWorkspacePolicy | None = None


class UpdateProject(Command, tag="project.update.v1", frozen=True, kw_only=True):
    """Rename a project or replace its policy → ``Project``."""

    project_id: str
    name: str | msgspec.UnsetType = msgspec.UNSET
    execution_workspace_policy: ExecutionWorkspacePolicy | msgspec.UnsetType = msgspec.UNSET


class DeleteProject(Command, tag="project.delete.v1", frozen=True, kw_only=True):
    """Delete a project → ``Deleted``; ``has_open_dependents`` (409) while it has open workspaces
    or project workspaces."""

    project_id: str


class GetProject(Query, tag="project.get.v1", frozen=True, kw_only=True):
    """Read a project → ``Project``."""

    project_id: str


class ListProjects(Query, tag="project.list.v1", frozen=True, kw_only=True):
    """A company's projects, oldest first → ``Page[Project]``."""

    company_id: str
    limit: int = 50
    offset: int = 0


class CreateProjectWorkspace(Command, tag="project_workspace.create.v1", frozen=True, kw_only=True):
    """Add a project workspace → ``ProjectWorkspace`` (host-bound: a repo-only one is cloned now,
    a long operation; neither ``cwd`` nor ``repoUrl`` → ``workspace_path_required`` 422)."""

    project_id: str
    name: str
    cwd: str | None = None
    repo_url: str | None = None
    repo_ref: str | None = None
    is_primary: bool = False
    setup_command: str | None = None
    cleanup_command: str | None = None
    runtime_config: RuntimeConfig | None = None


class UpdateProjectWorkspace(Command, tag="project_workspace.update.v1", frozen=True, kw_only=True):
    """Change a project workspace → ``ProjectWorkspace`` (host-bound: a new ``repoUrl`` clones)."""

    project_id: str
    workspace_id: str
    name: str | msgspec.UnsetType = msgspec.UNSET
    cwd: str | msgspec.UnsetType | None = msgspec.UNSET
    repo_url: str | msgspec.UnsetType | None = msgspec.UNSET
    repo_ref: str | msgspec.UnsetType | None = msgspec.UNSET
    is_primary: bool | msgspec.UnsetType = msgspec.UNSET
    setup_command: str | msgspec.UnsetType | None = msgspec.UNSET
    cleanup_command: str | msgspec.UnsetType | None = msgspec.UNSET
    runtime_config: RuntimeConfig | msgspec.UnsetType | None = msgspec.UNSET


class DeleteProjectWorkspace(Command, tag="project_workspace.delete.v1", frozen=True, kw_only=True):
    """Delete the record (never the directory) → ``Deleted``; 409 ``has_open_dependents`` while
    open execution workspaces use it."""

    project_id: str
    workspace_id: str


class GetProjectWorkspace(Query, tag="project_workspace.get.v1", frozen=True, kw_only=True):
    """Read a project workspace → ``ProjectWorkspace``."""

    project_id: str
    workspace_id: str


class ListProjectWorkspaces(Query, tag="project_workspace.list.v1", frozen=True, kw_only=True):
    """A project's workspaces, oldest first → ``Page[ProjectWorkspace]``."""

    project_id: str
    limit: int = 50
    offset: int = 0


class CreateIssue(Command, tag="issue.create.v1", frozen=True, kw_only=True):
    """Create an issue → ``Issue`` (identifier from the company's prefix unless given;
    ``identifier_taken`` 409 when given and used)."""

    company_id: str
    title: str
    project_id: str
    identifier: str | None = None
    status: IssueStatus = "backlog"
    parent_id: str | None = None
    assignee_agent_id: str | None = None
    project_workspace_id: str | None = None
    execution_workspace_settings: ExecutionWorkspaceSettings | None = None
    description: str | None = None
    priority: IssuePriority | None = None
    comment: str | None = None


class UpdateIssue(Command, tag="issue.update.v1", frozen=True, kw_only=True):
    """Change an issue → ``Issue``. Agents may update only issues assigned to them or bound to
    their run, and change only the status, title, description, priority, a comment and
    ``executionWorkspaceSettings.mode`` (403 naming any other field changed)."""

    issue_id: str
    title: str | msgspec.UnsetType = msgspec.UNSET
    status: IssueStatus | msgspec.UnsetType = msgspec.UNSET
    parent_id: str | msgspec.UnsetType | None = msgspec.UNSET
    assignee_agent_id: str | msgspec.UnsetType | None = msgspec.UNSET
    project_workspace_id: str | msgspec.UnsetType | None = msgspec.UNSET
    execution_workspace_settings: ExecutionWorkspaceSettings | msgspec.UnsetType | None = (
        msgspec.UNSET
    )
    description: str | msgspec.UnsetType | None = msgspec.UNSET
    priority: IssuePriority | msgspec.UnsetType | None = msgspec.UNSET
    comment: str | msgspec.UnsetType = msgspec.UNSET


class DeleteIssue(Command, tag="issue.delete.v1", frozen=True, kw_only=True):
    """Delete an issue → ``Deleted``; 409 ``has_open_dependents`` while its workspace is open
    or it has open child issues."""

    issue_id: str


class GetIssue(Query, tag="issue.get.v1", frozen=True, kw_only=True):
    """Read an issue → ``Issue``."""

    issue_id: str


class ListIssues(Query, tag="issue.list.v1", frozen=True, kw_only=True):
    """A company's issues, newest first → ``Page[Issue]``; empty filters select all."""

    company_id: str
    project_id: str | None = None
    statuses: list[IssueStatus] = msgspec.field(default_factory=list)
    assignee_agent_id: str | None = None
    limit: int = 50
    offset: int = 0


class AddWorkProduct(Command, tag="issue.add_work_product.v1", frozen=True, kw_only=True):
    """Record an issue's output → ``WorkProduct``."""

    issue_id: str
    product_type: WorkProductType
    """The work product's ``type`` (``type`` is the message tag on the bus)."""
    url: str | None = None
    external_id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class ListWorkProducts(Query, tag="issue.list_work_products.v1", frozen=True, kw_only=True):
    """An issue's work products, oldest first → ``Page[WorkProduct]``."""

    issue_id: str
    limit: int = 50
    offset: int = 0
