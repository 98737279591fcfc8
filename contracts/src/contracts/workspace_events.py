"""Public events of projects, project workspaces and issues (owner: workspace-realizer).

Past tense, with the envelope of :class:`contracts.base.Event`. ``*.created`` and ``*.updated``
carry the whole record after the change (``changedFields`` names what changed), so a consumer
keeps a copy without replaying partial facts. Assignment, status and workspace links are facts of
their own, so the controller and the supervisor can react to exactly those.
"""

from __future__ import annotations

import msgspec

from contracts.base import Event
from contracts.workspace_config import (
    ExecutionWorkspacePolicy,
    ExecutionWorkspaceSettings,
    ManagedCheckout,
    RuntimeConfig,
)
from contracts.workspace_views import IssuePriority, IssueStatus, WorkProduct

__all__ = [
    "IssueAssigned",
    "IssueCommented",
    "IssueCreated",
    "IssueDeleted",
    "IssueStatusChanged",
    "IssueUpdated",
    "IssueWorkProductAdded",
    "IssueWorkspaceLinked",
    "ProjectCreated",
    "ProjectDeleted",
    "ProjectUpdated",
    "ProjectWorkspaceCheckoutChanged",
    "ProjectWorkspaceCreated",
    "ProjectWorkspaceDeleted",
    "ProjectWorkspaceMoved",
    "ProjectWorkspaceRuntimeConfigChanged",
    "ProjectWorkspaceUpdated",
]


class ProjectCreated(Event, tag="project.created.v1", frozen=True, kw_only=True):
    """A project was created."""

    name: str
    execution_workspace_policy: ExecutionWorkspacePolicy


class ProjectUpdated(Event, tag="project.updated.v1", frozen=True, kw_only=True):
    """A project was renamed or its policy replaced (the whole record after the change)."""

    name: str
    execution_workspace_policy: ExecutionWorkspacePolicy
    changed_fields: list[str] = msgspec.field(default_factory=list)


class ProjectDeleted(Event, tag="project.deleted.v1", frozen=True, kw_only=True):
    """A project was deleted (nothing open depended on it)."""


class ProjectWorkspaceCreated(Event, tag="project_workspace.created.v1", frozen=True, kw_only=True):
    """A project workspace was added (with its runtime config, so the supervisor has its copy)."""

    project_id: str
    name: str
    cwd: str | None
    repo_url: str | None
    repo_ref: str | None
    is_primary: bool
    setup_command: str | None = None
    cleanup_command: str | None = None
    runtime_config: RuntimeConfig | None = None
    managed_checkout: ManagedCheckout = msgspec.field(default_factory=ManagedCheckout)
    node_id: str | None = None
    """The worker node that holds its checkout (None: recorded before nodes, the only one)."""


class ProjectWorkspaceUpdated(Event, tag="project_workspace.updated.v1", frozen=True, kw_only=True):
    """A project workspace changed (the whole record; runtime config changes have their own
    event too). Setting ``isPrimary`` publishes one of these for each sibling it cleared."""

    project_id: str
    name: str
    cwd: str | None
    repo_url: str | None
    repo_ref: str | None
    is_primary: bool
    setup_command: str | None = None
    cleanup_command: str | None = None
    changed_fields: list[str] = msgspec.field(default_factory=list)


class ProjectWorkspaceRuntimeConfigChanged(
    Event, tag="project_workspace.runtime_config_changed.v1", frozen=True, kw_only=True
):
    """A project workspace's runtime config was replaced (``None``: removed); the full config."""

    project_id: str
    runtime_config: RuntimeConfig | None


class ProjectWorkspaceCheckoutChanged(
    Event, tag="project_workspace.checkout_changed.v1", frozen=True, kw_only=True
):
    """The managed clone of a repo-only project workspace changed state (cloning, ready with
    its path, failed with the error)."""

    project_id: str
    managed_checkout: ManagedCheckout


class ProjectWorkspaceMoved(Event, tag="project_workspace.moved.v1", frozen=True, kw_only=True):
    """A drain moved the repo-only project workspace to ``toNode`` (its managed checkout is
    cloned there; back to ``fromNode`` when the move could not be finished)."""

    project_id: str
    from_node: str | None
    to_node: str


class ProjectWorkspaceDeleted(Event, tag="project_workspace.deleted.v1", frozen=True, kw_only=True):
    """A project workspace record was deleted (its directory is left as it is)."""

    project_id: str


class IssueCreated(Event, tag="issue.created.v1", frozen=True, kw_only=True):
    """An issue was created."""

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


class IssueUpdated(Event, tag="issue.updated.v1", frozen=True, kw_only=True):
    """An issue's descriptive fields or settings changed (title, description, priority, parent,
    project workspace, settings): the record after the change. Status, assignee and workspace
    link changes are their own events."""

    project_id: str
    identifier: str
    title: str
    description: str | None = None
    priority: IssuePriority | None = None
    parent_id: str | None = None
    project_workspace_id: str | None = None
    execution_workspace_settings: ExecutionWorkspaceSettings | None = None
    changed_fields: list[str] = msgspec.field(default_factory=list)


class IssueAssigned(Event, tag="issue.assigned.v1", frozen=True, kw_only=True):
    """An issue's assignee changed (``None``: unassigned)."""

    assignee_agent_id: str | None
    previous_assignee_agent_id: str | None = None


class IssueStatusChanged(Event, tag="issue.status_changed.v1", frozen=True, kw_only=True):
    """An issue moved from one status to another."""

    from_status: IssueStatus
    to_status: IssueStatus
    is_terminal: bool


class IssueWorkspaceLinked(Event, tag="issue.workspace_linked.v1", frozen=True, kw_only=True):
    """The issue's current execution workspace changed (``None``: detached)."""

    execution_workspace_id: str | None
    previous_execution_workspace_id: str | None = None


class IssueCommented(Event, tag="issue.commented.v1", frozen=True, kw_only=True):
    """A comment was sent with a create or update of the issue."""

    comment: str


class IssueWorkProductAdded(Event, tag="issue.work_product_added.v1", frozen=True, kw_only=True):
    """A work product was recorded on the issue."""

    work_product: WorkProduct


class IssueDeleted(Event, tag="issue.deleted.v1", frozen=True, kw_only=True):
    """An issue was deleted."""

    identifier: str
