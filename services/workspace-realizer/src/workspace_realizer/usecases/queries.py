"""Reads of the realizer's read models, each checking that the principal may see what it asks for
(ARCHITECTURE §5.1): another company's thing is not found (404); inside the company an agent key
or run token reaches only its ``OWN`` things (403 otherwise):

- issues: an agent key those assigned to its agent; a run token its run's issue (even once the
  issue is reassigned);
- execution workspaces: the workspaces of those issues (the source issue, or an issue whose
  current workspace it is), and for a run token also the workspace its run holds;
- workspace operations: those of a workspace (or, without one, of an issue) it reaches; a project
  workspace's own operations (its managed clone) are the board's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from servicekit.access import AccessDeniedError
from workspace_realizer.domain.errors import NotFoundError
from workspace_realizer.domain.workspaces import REUSABLE_MODES
from workspace_realizer.readmodels import RealizerReadModels
from workspace_realizer.usecases.catalog_checks import HostGrant

if TYPE_CHECKING:
    from datetime import datetime

    from servicekit.access import Access
    from workspace_realizer.domain import (
        ExecutionWorkspace,
        Issue,
        Project,
        ProjectWorkspace,
        WorkspaceOperation,
    )

__all__ = ["Page", "Queries"]

T = TypeVar("T")
Page = tuple[list[T], int]


def _page(rows: Iterable[T], limit: int, offset: int) -> Page[T]:
    items = list(rows)
    return items[offset : offset + limit], len(items)


class Queries(RealizerReadModels):
    """Lookups with access checks, and the list queries of API.md."""

    def host_grant(self, company_id: str) -> HostGrant:
        """What of the host the company's project workspaces and issues may name."""
        copy = self.company_copy(company_id)
        if copy is None:
            return HostGrant(company_id=company_id)
        return HostGrant(
            company_id=company_id, trusted=copy.host_trusted, roots=tuple(copy.allowed_roots)
        )

    def load(self, ident: str) -> Any:
        """The aggregate with this id, from the repository (for a use case to change)."""
        return self.repository.get(UUID(ident))

    def project_of(self, access: Access, project_id: str) -> Project:
        """The project, or ``NotFoundError`` (missing, deleted, or another company's)."""
        project = self.projects.get(project_id)
        if project is None or project.deleted:
            raise NotFoundError(f"There is no project {project_id}.", projectId=project_id)
        access.check_company(project.company_id, "project", project_id)
        return project

    def project_workspace_of(
        self, access: Access, project_id: str | None, workspace_id: str
    ) -> ProjectWorkspace:
        """The project workspace (of ``project_id`` when given), or ``NotFoundError``."""
        found = self.project_workspaces.get(workspace_id)
        if found is None or found.deleted or project_id not in (None, found.project_id):
            raise NotFoundError(
                f"There is no project workspace {workspace_id}.", projectWorkspaceId=workspace_id
            )
        access.check_company(found.company_id, "project workspace", workspace_id)
        return found

    def issue_of(self, access: Access, issue_id: str) -> Issue:
        """The issue, or ``NotFoundError``; an agent key only reaches those assigned to its agent,
        a run token only its run's."""
        issue = self.issues.get(issue_id)
        if issue is None or issue.deleted:
            raise NotFoundError(f"There is no issue {issue_id}.", issueId=issue_id)
        access.check_company(issue.company_id, "issue", issue_id)
        access.check_issue(issue_id, issue.assignee_agent_id)
        return issue

    def workspace_of(self, access: Access, workspace_id: str) -> ExecutionWorkspace:
        """The execution workspace, or ``NotFoundError``; an agent only reaches those of its
        issues (a run token: of its run's issue, or the one its run holds)."""
        workspace = self.workspaces.get(workspace_id)
        if workspace is None:
            raise NotFoundError(
                f"There is no execution workspace {workspace_id}.", workspaceId=workspace_id
            )
        access.check_company(workspace.company_id, "execution workspace", workspace_id)
        if not self.reaches_workspace(access, workspace):
            if access.is_run_token:
                raise AccessDeniedError(
                    "This run's token reaches only the workspaces of its run's issue and the "
                    "one its run holds; use a board key for the others.",
                    workspaceId=workspace_id,
                    runIssueId=access.issue_id,
                )
            raise AccessDeniedError(
                "This agent reaches only the workspaces of the issues assigned to it; use a "
                "board key for the others.",
                workspaceId=workspace_id,
            )
        return workspace

    def operation_of(self, access: Access, operation_id: str) -> WorkspaceOperation:
        """A workspace operation this service recorded, or ``NotFoundError``; an agent reaches
        those of the workspaces (or issues) it reaches, never a project workspace's own."""
        operation = self.operations.get(operation_id)
        if operation is None:
            raise NotFoundError(
                f"There is no workspace operation {operation_id}.", operationId=operation_id
            )
        access.check_company(operation.company_id, "workspace operation", operation_id)
        if operation.execution_workspace_id:
            self.workspace_of(access, operation.execution_workspace_id)
        elif access.is_agent:
            issue = self.issues.get(operation.issue_id or "")
            if issue is None or not access.owns_issue(str(issue.id), issue.assignee_agent_id):
                raise AccessDeniedError(
                    "This operation belongs to no workspace or issue of this agent (a project "
                    "workspace's managed clone is the board's); use a board key to read it.",
                    operationId=operation_id,
                )
        return operation

    def reaches_workspace(self, access: Access, workspace: ExecutionWorkspace) -> bool:
        """Whether ``access`` reaches the workspace (``OWN``; the board reaches them all): one of
        its linked issues is the agent's, or (a run token) its run holds it."""
        if not access.is_agent:
            return True
        if access.holds(self.run_holders.get(str(workspace.id), ())):
            return True
        return any(
            access.owns_issue(str(issue.id), issue.assignee_agent_id)
            for issue in self.issues_linked_to(workspace)
        )

    # -- lists -----------------------------------------------------------------------------

    def list_projects(
        self, access: Access, company_id: str, limit: int, offset: int
    ) -> Page[Project]:
        """A company's projects, oldest first."""
        access.check_company(company_id, "company", company_id)
        rows = (p for p in self.projects.values() if p.company_id == company_id and not p.deleted)
        return _page(_sorted(rows, lambda p: (p.created_on, str(p.id))), limit, offset)

    def list_project_workspaces(
        self, access: Access, project_id: str, limit: int, offset: int
    ) -> Page[ProjectWorkspace]:
        """A project's workspaces, oldest first."""
        self.project_of(access, project_id)
        rows = (
            w
            for w in self.project_workspaces.values()
            if w.project_id == project_id and not w.deleted
        )
        return _page(_sorted(rows, lambda w: (w.created_on, str(w.id))), limit, offset)

    def list_issues(
        self,
        access: Access,
        company_id: str,
        *,
        project_id: str | None = None,
        statuses: Sequence[str] = (),
        assignee_agent_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Page[Issue]:
        """A company's issues, newest first (an agent key sees only those assigned to its agent,
        a run token only its run's)."""
        access.check_company(company_id, "company", company_id)
        rows = [
            issue
            for issue in self.issues.values()
            if issue.company_id == company_id
            and not issue.deleted
            and project_id in (None, issue.project_id)
            and (not statuses or issue.status in statuses)
            and assignee_agent_id in (None, issue.assignee_agent_id)
            and access.owns_issue(str(issue.id), issue.assignee_agent_id)
        ]
        return _page(
            _sorted(rows, lambda i: (i.created_on, str(i.id)), reverse=True), limit, offset
        )

    def list_workspaces(
        self,
        access: Access,
        company_id: str,
        *,
        project_id: str | None = None,
        project_workspace_id: str | None = None,
        issue_id: str | None = None,
        statuses: Sequence[str] = (),
        reuse_eligible: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> Page[ExecutionWorkspace]:
        """A company's execution workspaces, ``lastUsedAt`` desc then ``createdAt`` desc."""
        access.check_company(company_id, "company", company_id)
        rows = []
        for ws in self.workspaces.values():
            if ws.company_id != company_id:
                continue
            if project_id not in (None, ws.project_id) or issue_id not in (
                None,
                ws.source_issue_id,
            ):
                continue
            if project_workspace_id not in (None, ws.project_workspace_id):
                continue
            if (statuses and ws.status not in statuses) or (reuse_eligible and not _reusable(ws)):
                continue
            if not self.reaches_workspace(access, ws):
                continue
            rows.append(ws)
        order = _sorted(rows, lambda w: (w.last_used_at, w.created_on), reverse=True)
        return _page(order, limit, offset)

    def list_operations(
        self, access: Access, workspace_id: str, limit: int, offset: int
    ) -> Page[WorkspaceOperation]:
        """The operations recorded against a workspace, oldest first."""
        self.workspace_of(access, workspace_id)
        ids = self.operations_by_workspace.get(workspace_id, [])
        return _page((self.operations[i] for i in ids), limit, offset)


def _reusable(workspace: ExecutionWorkspace) -> bool:
    return workspace.is_open and not workspace.closing and workspace.mode in REUSABLE_MODES


def _sorted(
    rows: Iterable[T], key: Callable[[T], tuple[datetime, Any]], reverse: bool = False
) -> list[T]:
    return sorted(rows, key=key, reverse=reverse)
