"""Read shapes of projects, project workspaces, issues and work products (API.md resources).

The realizer answers queries and commands with these; the gateway returns them as HTTP bodies.
Lists travel as :class:`Page` (the gateway turns ``total`` into ``X-Total-Count``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

import msgspec

from contracts.base import Struct
from contracts.workspace_config import (
    ExecutionWorkspacePolicy,
    ExecutionWorkspaceSettings,
    ManagedCheckout,
    RuntimeConfig,
)

__all__ = [
    "ISSUE_STATUSES",
    "TERMINAL_ISSUE_STATUSES",
    "Deleted",
    "Issue",
    "IssuePriority",
    "IssueStatus",
    "Page",
    "Project",
    "ProjectWorkspace",
    "WorkProduct",
    "WorkProductType",
]

T = TypeVar("T")

IssueStatus = Literal["backlog", "todo", "in_progress", "in_review", "blocked", "done", "cancelled"]
ISSUE_STATUSES: tuple[str, ...] = (
    "backlog",
    "todo",
    "in_progress",
    "in_review",
    "blocked",
    "done",
    "cancelled",
)
TERMINAL_ISSUE_STATUSES: tuple[str, ...] = ("done", "cancelled")
"""An issue in one of these is closed: its isolated workspace may be archived or reaped."""

IssuePriority = Literal["critical", "high", "medium", "low"]
WorkProductType = Literal["pull_request", "branch", "commit", "preview_url"]


class Page(Struct, Generic[T], frozen=True, kw_only=True):
    """One page of a list and the number of rows in all."""

    items: list[T]
    total: int


class Deleted(Struct, frozen=True, kw_only=True):
    """The answer to a delete (the gateway answers 204)."""

    id: str


class Project(Struct, frozen=True, kw_only=True):
    """``{id, companyId, name, executionWorkspacePolicy, createdAt, updatedAt}``."""

    id: str
    company_id: str
    name: str
    execution_workspace_policy: ExecutionWorkspacePolicy
    created_at: datetime
    updated_at: datetime


class ProjectWorkspace(Struct, frozen=True, kw_only=True):
    """A project's codebase root: a local checkout (``cwd``) or a repository (``repoUrl``).

    A repo-only workspace gets a managed clone; ``managedCheckout.path`` is then its checkout.
    """

    id: str
    company_id: str
    project_id: str
    name: str
    cwd: str | None
    repo_url: str | None
    repo_ref: str | None
    is_primary: bool
    setup_command: str | None
    cleanup_command: str | None
    runtime_config: RuntimeConfig | None
    managed_checkout: ManagedCheckout
    created_at: datetime
    updated_at: datetime
    node_id: str | None = None
    """The worker node that holds its checkout, where its worktrees, services and jobs run
    (None: recorded before worker nodes, on the only node)."""


class Issue(Struct, frozen=True, kw_only=True):
    """The workspace-facing record of a task; ``identifier`` like ``ACME-12``."""

    id: str
    company_id: str
    project_id: str
    identifier: str
    title: str
    status: IssueStatus
    description: str | None = None
    priority: IssuePriority | None = None
    parent_id: str | None = None
    assignee_agent_id: str | None = None
    project_workspace_id: str | None = None
    execution_workspace_settings: ExecutionWorkspaceSettings | None = None
    execution_workspace_id: str | None = None
    """The issue's current execution workspace (at most one)."""
    created_at: datetime
    updated_at: datetime


class WorkProduct(Struct, frozen=True, kw_only=True):
    """An issue's output; ``pull_request`` ones are the evidence for ``merged_via_pr``."""

    id: str
    company_id: str
    issue_id: str
    type: WorkProductType
    url: str | None = None
    external_id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    execution_workspace_id: str | None = None
    created_at: datetime
    updated_at: datetime
