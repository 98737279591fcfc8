"""Use cases of issues and their work products."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from eventstore.follower import follow_all
from servicekit.access import AccessDeniedError
from workspace_realizer.domain import Issue
from workspace_realizer.domain.errors import (
    DependentsError,
    IdentifierTakenError,
    NotFoundError,
)
from workspace_realizer.usecases.queries import Queries
from workspace_realizer.usecases.references import reference_error

if TYPE_CHECKING:
    from servicekit.access import Access
    from workspace_realizer.domain import CompanyCopy, Project
    from workspace_realizer.domain.documents import (
        IssueChanges,
        IssueRevision,
        IssueSettingsDocument,
        NewIssue,
        WorkProductInput,
        WorkProductRecord,
    )

__all__ = ["IssueUseCases"]


class IssueUseCases(Queries):
    """Create, change and delete issues; record their work products."""

    def create_issue(self, access: Access, company_id: str, fields: NewIssue) -> Issue:
        """Create an issue; its identifier comes from the company's prefix unless given.

        ``fields``: ``project_id``, ``title``, and optionally ``identifier``, ``status``,
        ``parent_id``, ``assignee_agent_id``, ``project_workspace_id``, ``settings``,
        ``description``, ``priority``, ``comment``. Every id given must name a thing of
        ``company_id`` (404 naming the field; ``assignee_agent_id`` is checked by the endpoint,
        :mod:`workspace_realizer.usecases.references`).

        Creating issues is the board's, in its own company (ARCHITECTURE §5.1): the endpoint
        refuses an agent key or run token (403) and another company (404) before any lookup,
        so ``access`` is a board's that sees ``company_id``.
        """
        project = self._project_reference(access, company_id, fields["project_id"])
        self._check_references(project, None, fields)
        self._check_host_paths(company_id, fields.get("settings"))
        company = self._company(company_id)
        identifier = self._identifier(company, fields.get("identifier"))
        issue = Issue.create(
            company_id=company_id,
            project_id=fields["project_id"],
            identifier=identifier,
            title=fields["title"],
            description=fields.get("description"),
            priority=fields.get("priority"),
            status=fields.get("status", "backlog"),
            parent_id=fields.get("parent_id"),
            assignee_agent_id=fields.get("assignee_agent_id"),
            project_workspace_id=fields.get("project_workspace_id"),
            settings=fields.get("settings"),
            at=self.now(),
        )
        comment = fields.get("comment")
        if comment:
            issue.comment(comment)
        self.save(company, issue)
        return self.issues[str(issue.id)]

    def update_issue(self, access: Access, issue_id: str, changes: IssueChanges) -> Issue:
        """Change an issue: any of the revisable fields, ``status``, ``assignee_agent_id``,
        ``comment``. Moving the issue in or out of ``in_review`` moves its open workspace along
        (DECISIONS 12): into ``in_review``, and out of it to ``active`` while a run holds the
        workspace, else ``idle``.

        An agent key or run token changes only ``status``, ``title``, ``description``,
        ``priority``, ``settings.mode`` and adds a ``comment`` (ARCHITECTURE §5.1); any other
        change (the assignee, the parent, the project workspace, the settings the board set) is
        refused with 403 before anything is saved.
        """
        current = self.issue_of(access, issue_id)
        self._check_agent_changes(access, current, changes)
        if "settings" in changes:
            self._check_agent_settings(access, current.settings, changes["settings"])
            self._check_host_paths(current.company_id, changes["settings"])
        project = self.projects.get(current.project_id)
        if project is not None:
            self._check_references(project, issue_id, changes)
        if "settings" in changes and access.is_agent:
            # An agent sends the mode; what the board set (commands, pins) stays.
            mode = (changes["settings"] or {}).get("mode")
            kept = {k: v for k, v in (current.settings or {}).items() if k != "mode"}
            merged = cast("IssueSettingsDocument", kept)
            if mode:
                merged["mode"] = mode
            changes = {**changes, "settings": merged}
        issue: Issue = self.load(issue_id)
        issue.revise(_revision(changes))
        if "status" in changes:
            issue.change_status(changes["status"], self.now())
        if "assignee_agent_id" in changes:
            issue.assign(changes["assignee_agent_id"])
        if changes.get("comment"):
            issue.comment(changes["comment"])
        self.save(issue, *self.issue_followers(issue))
        return self.issues[issue_id]

    def delete_issue(self, access: Access, issue_id: str) -> None:
        """Delete an issue whose workspace is closed and whose children are all terminal (the
        board's: an agent is refused before the issue is looked up)."""
        access.check_board("delete issues")
        current = self.issue_of(access, issue_id)
        workspace = self.workspaces.get(current.execution_workspace_id or "")
        if workspace is not None and (workspace.is_open or workspace.closing):
            raise DependentsError(
                f"The issue's execution workspace {workspace.id} is open; archive it first.",
                executionWorkspaceId=str(workspace.id),
            )
        for child in self.issues.values():
            if child.parent_id == issue_id and not child.deleted and not child.terminal:
                raise DependentsError(
                    f"The child issue {child.identifier} is still open.", childIssueId=str(child.id)
                )
        issue: Issue = self.load(issue_id)
        issue.delete()
        self.save(issue)

    def add_work_product(
        self, access: Access, issue_id: str, product: WorkProductInput
    ) -> WorkProductRecord:
        """Record a pull request, branch, commit or preview URL (the PR is ``merged_via_pr``
        evidence); return the stored product."""
        current = self.issue_of(access, issue_id)
        stored: WorkProductRecord = {
            "id": str(uuid.uuid4()),
            "type": product.get("type"),
            "url": product.get("url"),
            "externalId": product.get("externalId"),
            "title": product.get("title"),
            "metadata": dict(product.get("metadata") or {}),
            "executionWorkspaceId": current.execution_workspace_id,
            "createdAt": self.now().isoformat(),
        }
        issue: Issue = self.load(issue_id)
        issue.add_work_product(stored)
        self.save(issue)
        return stored

    # -- helpers ---------------------------------------------------------------------------

    def _check_host_paths(self, company_id: str, settings: Any) -> None:
        """An issue's own ``workspaceStrategy.worktreeParentDir`` obeys the company's host
        access as the project's does (docs/design/isolation.md).

        Raises:
            AccessDeniedError: A host path the company may not name (403).
        """
        strategy = settings.get("workspaceStrategy") if isinstance(settings, Mapping) else None
        if isinstance(strategy, Mapping):
            self.host_paths.check_worktree_parent_dir(
                strategy.get("worktreeParentDir"),
                self.host_grant(company_id),
                "executionWorkspaceSettings.workspaceStrategy.worktreeParentDir",
            )

    def _company(self, company_id: str) -> CompanyCopy:
        copy = self.company_copy(company_id)
        if copy is None:
            raise NotFoundError(
                f"The company {company_id} is not known to the workspace-realizer (yet).",
                companyId=company_id,
            )
        company: CompanyCopy = self.load(str(copy.id))
        return company

    def _identifier(self, company: CompanyCopy, given: str | None) -> str:
        # ``company`` was loaded from the store: whatever claimed a number before it is read
        # now (another replica's save included); whatever claims one after it conflicts on the
        # copy's version when this save comes.
        follow_all(self)
        if given:
            if (company.company_id, given) in self.identifiers:
                raise IdentifierTakenError(
                    f"The identifier {given} is taken; leave it out to get the next one.",
                    identifier=given,
                )
            company.note_identifier(given)
            return given
        identifier = company.next_identifier()
        while (company.company_id, identifier) in self.identifiers:
            identifier = company.next_identifier()
        return identifier

    def _project_reference(self, access: Access, company_id: str, project_id: str) -> Project:
        """The issue's project: a live one of ``company_id``, else 404 naming ``projectId``."""
        project = self.projects.get(project_id)
        if (
            project is None
            or project.deleted
            or project.company_id != company_id
            or not access.sees_company(project.company_id)
        ):
            raise reference_error("projectId", project_id, "a project")
        return project

    def _check_references(
        self, project: Project, issue_id: str | None, fields: Mapping[str, Any]
    ) -> None:
        """Refuse ids of the body that name nothing of the issue's company (ARCHITECTURE §5.1):
        ``parent_id`` (a live issue, not the issue itself), ``project_workspace_id`` (a live
        one of the issue's project), ``settings.executionWorkspaceId`` (a workspace to reuse).

        Raises:
            NotFoundError: Naming the field (``details.field``).
        """
        company_id = project.company_id
        parent_id = fields.get("parent_id")
        if parent_id:
            parent = self.issues.get(parent_id)
            if (
                parent is None
                or parent.deleted
                or parent.company_id != company_id
                or parent_id == issue_id
            ):
                raise reference_error("parentId", parent_id, "another issue")
        workspace_id = fields.get("project_workspace_id")
        if workspace_id:
            found = self.project_workspaces.get(workspace_id)
            if found is None or found.deleted or found.company_id != company_id:
                raise reference_error("projectWorkspaceId", workspace_id, "a project workspace")
            if found.project_id != str(project.id):
                raise reference_error(
                    "projectWorkspaceId", workspace_id, "a project workspace", "the issue's project"
                )
        pinned = (fields.get("settings") or {}).get("executionWorkspaceId")
        if pinned:
            workspace = self.workspaces.get(pinned)
            if workspace is None or workspace.company_id != company_id:
                raise reference_error(
                    "executionWorkspaceSettings.executionWorkspaceId",
                    pinned,
                    "an execution workspace",
                )

    @staticmethod
    def _check_agent_changes(access: Access, current: Issue, changes: Mapping[str, Any]) -> None:
        """Refuse an agent's change of a field outside :data:`_AGENT_FIELDS` (the assignee, the
        parent, the project workspace: a board key's). A field sent with the value it has
        changes nothing and passes, as an unchanged ``executionWorkspaceSettings`` does.

        Raises:
            AccessDeniedError: Naming the fields (``details.fields``, camelCase).
        """
        if not access.is_agent:
            return
        missing = object()
        refused = [
            _BOARD_FIELDS.get(name, name)
            for name, value in changes.items()
            if name not in _AGENT_FIELDS and getattr(current, name, missing) != value
        ]
        if refused:
            raise AccessDeniedError(
                f"An agent may not change {', '.join(refused)} of an issue; a board key may. An "
                "agent changes the status, title, description, priority and "
                "executionWorkspaceSettings.mode, and comments.",
                fields=refused,
            )

    @staticmethod
    def _check_agent_settings(
        access: Access, before: IssueSettingsDocument | None, after: IssueSettingsDocument | None
    ) -> None:
        """Agents may change ``mode`` only (board keys set commands and workspace pins)."""
        if not access.is_agent:
            return

        def strip(settings: IssueSettingsDocument | None) -> IssueSettingsDocument:
            kept = {k: v for k, v in (settings or {}).items() if k != "mode" and v is not None}
            return cast("IssueSettingsDocument", kept)

        if strip(after) and strip(before) != strip(after):
            raise AccessDeniedError(
                "An agent may change only executionWorkspaceSettings.mode; a board key sets the "
                "rest.",
                field="executionWorkspaceSettings",
            )


def _revision(changes: IssueChanges) -> IssueRevision:
    """The revisable fields of ``changes`` (not the status, the assignee or the comment)."""
    revision: IssueRevision = {}
    if "title" in changes:
        revision["title"] = changes["title"]
    if "description" in changes:
        revision["description"] = changes["description"]
    if "priority" in changes:
        revision["priority"] = changes["priority"]
    if "parent_id" in changes:
        revision["parent_id"] = changes["parent_id"]
    if "project_workspace_id" in changes:
        revision["project_workspace_id"] = changes["project_workspace_id"]
    if "settings" in changes:
        revision["settings"] = changes["settings"]
    return revision


_AGENT_FIELDS = frozenset({"status", "title", "description", "priority", "comment", "settings"})
"""What an agent's update may change (``settings``: only its ``mode``, ``_check_agent_settings``)."""

_BOARD_FIELDS = {
    "assignee_agent_id": "assigneeAgentId",
    "parent_id": "parentId",
    "project_workspace_id": "projectWorkspaceId",
}
"""The fields only a board key changes, by their API names."""
