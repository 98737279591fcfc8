"""Issues: the workspace-facing record of a task (DECISIONS 10) and its work products."""

from __future__ import annotations

from datetime import datetime
from typing import Final, cast

from eventsourcing.domain import event

from workspace_realizer.domain.base import CompanyScoped
from workspace_realizer.domain.documents import (
    IssueRevision,
    IssueSettingsDocument,
    WorkProductRecord,
)
from workspace_realizer.domain.errors import InvalidInputError
from workspace_realizer.domain.names import check_name

__all__ = [
    "ISSUE_STATUSES",
    "REVISABLE_FIELDS",
    "SETTINGS_MODES",
    "TERMINAL_STATUSES",
    "WORK_PRODUCT_TYPES",
    "Issue",
    "check_settings",
    "check_status",
]

ISSUE_STATUSES: Final = (
    "backlog",
    "todo",
    "in_progress",
    "in_review",
    "blocked",
    "done",
    "cancelled",
)
TERMINAL_STATUSES: Final = frozenset({"done", "cancelled"})
SETTINGS_MODES: Final = (
    "inherit",
    "shared_workspace",
    "isolated_workspace",
    "operator_branch",
    "reuse_existing",
    "agent_default",
)
WORK_PRODUCT_TYPES: Final = ("pull_request", "branch", "commit", "preview_url")
_SETTINGS_KEYS: Final = frozenset({"mode", "executionWorkspaceId", "workspaceStrategy"})
REVISABLE_FIELDS: Final = (
    "title",
    "description",
    "priority",
    "parent_id",
    "project_workspace_id",
    "settings",
)
_CAMEL: Final = {
    "title": "title",
    "description": "description",
    "priority": "priority",
    "parent_id": "parentId",
    "project_workspace_id": "projectWorkspaceId",
    "settings": "executionWorkspaceSettings",
}


def check_status(status: str) -> str:
    """``status`` if it is an issue status, else ``InvalidInputError`` naming the choices."""
    if status not in ISSUE_STATUSES:
        raise InvalidInputError(
            f"Issue status {status!r} is not one of {', '.join(ISSUE_STATUSES)}.", field="status"
        )
    return status


def check_settings(settings: IssueSettingsDocument | None) -> IssueSettingsDocument | None:
    """``settings`` (stored camelCase) if its mode is known and it holds nothing else.

    Raises:
        InvalidInputError: Naming the field.
    """
    if settings is None:
        return None
    for key in settings:
        if key not in _SETTINGS_KEYS:
            raise InvalidInputError(
                f"executionWorkspaceSettings.{key} is not a setting "
                "(mode, executionWorkspaceId, workspaceStrategy).",
                field=f"executionWorkspaceSettings.{key}",
            )
    mode = settings.get("mode")
    if mode is not None and mode not in SETTINGS_MODES:
        raise InvalidInputError(
            f"executionWorkspaceSettings.mode {mode!r} is not one of {', '.join(SETTINGS_MODES)}.",
            field="executionWorkspaceSettings.mode",
        )
    kept = {key: value for key, value in settings.items() if value is not None}
    return cast("IssueSettingsDocument", kept)


class Issue(CompanyScoped):
    """A task's workspace-facing record: identifier, status, assignee, settings, current workspace."""

    @classmethod
    def create(
        cls,
        *,
        company_id: str,
        project_id: str,
        identifier: str,
        title: str,
        description: str | None = None,
        priority: str | None = None,
        status: str = "backlog",
        parent_id: str | None = None,
        assignee_agent_id: str | None = None,
        project_workspace_id: str | None = None,
        settings: IssueSettingsDocument | None = None,
        at: datetime,
    ) -> Issue:
        """A new issue.

        Raises:
            InvalidInputError: Empty title, unknown status or settings.
        """
        return cls(
            company_id=company_id,
            project_id=project_id,
            identifier=identifier,
            title=check_name(title, what="issue", field="title"),
            description=description,
            priority=priority,
            status=check_status(status),
            parent_id=parent_id,
            assignee_agent_id=assignee_agent_id,
            project_workspace_id=project_workspace_id,
            settings=check_settings(settings),
            at=at,
        )

    @event("Created")
    def __init__(
        self,
        *,
        company_id: str,
        project_id: str,
        identifier: str,
        title: str,
        description: str | None,
        priority: str | None,
        status: str,
        parent_id: str | None,
        assignee_agent_id: str | None,
        project_workspace_id: str | None,
        settings: IssueSettingsDocument | None,
        at: datetime,
    ) -> None:
        self.company_id = company_id
        self.project_id = project_id
        self.identifier = identifier
        self.title = title
        self.description = description
        self.priority = priority
        self.status = status
        self.status_since = at
        self.parent_id = parent_id
        self.assignee_agent_id = assignee_agent_id
        self.project_workspace_id = project_workspace_id
        self.settings = settings
        self.execution_workspace_id: str | None = None
        self.work_products: list[WorkProductRecord] = []
        self.deleted = False

    @property
    def terminal(self) -> bool:
        """True when the issue is ``done`` or ``cancelled``."""
        return self.status in TERMINAL_STATUSES

    def record(self) -> IssueRevision:
        """The revisable fields as they are now."""
        return {
            "title": self.title,
            "description": self.description,
            "priority": self.priority,
            "parent_id": self.parent_id,
            "project_workspace_id": self.project_workspace_id,
            "settings": self.settings,
        }

    def revise(self, changes: IssueRevision) -> list[str]:
        """Apply ``changes`` (a subset of :data:`REVISABLE_FIELDS`); return the changed fields
        (camelCase). One event carries the whole record after the change; none if nothing moved.

        Raises:
            InvalidInputError: An empty title, a parent that is the issue itself, bad settings.
        """
        after: IssueRevision = {**self.record(), **changes}
        title = check_name(str(after.get("title") or ""), what="issue", field="title")
        settings = check_settings(after.get("settings"))
        parent_id = after.get("parent_id")
        if parent_id is not None and parent_id == str(self.id):
            raise InvalidInputError("An issue cannot be its own parent.", field="parentId")
        after["title"], after["settings"] = title, settings
        changed = [_CAMEL[f] for f in REVISABLE_FIELDS if after.get(f) != getattr(self, f)]
        if changed:
            self._revised(
                project_id=self.project_id,
                identifier=self.identifier,
                title=title,
                description=after.get("description"),
                priority=after.get("priority"),
                parent_id=parent_id,
                project_workspace_id=after.get("project_workspace_id"),
                settings=settings,
                changed_fields=changed,
            )
        return changed

    @event("Revised")
    def _revised(
        self,
        project_id: str,
        identifier: str,
        title: str,
        description: str | None,
        priority: str | None,
        parent_id: str | None,
        project_workspace_id: str | None,
        settings: IssueSettingsDocument | None,
        changed_fields: list[str],
    ) -> None:
        self.title, self.description, self.priority = title, description, priority
        self.parent_id, self.project_workspace_id = parent_id, project_workspace_id
        self.settings = settings

    def change_status(self, status: str, at: datetime) -> None:
        """Move the issue to another status."""
        if check_status(status) != self.status:
            self._status_changed(status=status, previous=self.status, at=at)

    @event("StatusChanged")
    def _status_changed(self, status: str, previous: str, at: datetime) -> None:
        self.status, self.status_since = status, at

    def assign(self, agent_id: str | None) -> None:
        """Assign the issue to an agent (None: unassign)."""
        if agent_id != self.assignee_agent_id:
            self._assigned(agent_id=agent_id, previous=self.assignee_agent_id)

    @event("Assigned")
    def _assigned(self, agent_id: str | None, previous: str | None) -> None:
        self.assignee_agent_id = agent_id

    def link_workspace(self, workspace_id: str | None) -> None:
        """Make ``workspace_id`` the issue's current execution workspace (None: detach)."""
        if workspace_id != self.execution_workspace_id:
            self._workspace_linked(workspace_id=workspace_id, previous=self.execution_workspace_id)

    def unlink_workspace(self, workspace_id: str) -> None:
        """Detach the issue from ``workspace_id`` if it is the current one."""
        if workspace_id == self.execution_workspace_id:
            self.link_workspace(None)

    @event("WorkspaceLinked")
    def _workspace_linked(self, workspace_id: str | None, previous: str | None) -> None:
        self.execution_workspace_id = workspace_id

    def add_work_product(self, product: WorkProductRecord) -> None:
        """Record a pull request, branch, commit or preview URL the work produced.

        Raises:
            InvalidInputError: An unknown type.
        """
        if product.get("type") not in WORK_PRODUCT_TYPES:
            raise InvalidInputError(
                f"Work product type {product.get('type')!r} is not one of "
                f"{', '.join(WORK_PRODUCT_TYPES)}.",
                field="type",
            )
        self._work_product_added(product=product)

    @event("WorkProductAdded")
    def _work_product_added(self, product: WorkProductRecord) -> None:
        self.work_products.append(product)

    @event("Commented")
    def comment(self, comment: str) -> None:
        """Record a comment (Paperclip's ``comment`` field) as an event on the issue."""

    def delete(self) -> None:
        """Delete the issue (the application first checks no open workspace depends on it)."""
        if not self.deleted:
            self._deleted(identifier=self.identifier)

    @event("Deleted")
    def _deleted(self, identifier: str) -> None:
        self.deleted = True
