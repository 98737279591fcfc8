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

from workspace_realizer.domain.errors import NotFoundError
from workspace_realizer.domain.sources import HostGrant
from workspace_realizer.readmodels import RealizerReadModels

if TYPE_CHECKING:
    from datetime import datetime

    from eventsourcing.domain import Aggregate

    from servicekit.access import Access
    from workspace_realizer.domain import Issue, Project, ProjectWorkspace
    from workspace_realizer.usecases.ports import HostPaths

__all__ = ["Page", "Queries", "page", "sorted_by"]

T = TypeVar("T")
Page = tuple[list[T], int]


def page(rows: Iterable[T], limit: int, offset: int) -> Page[T]:
    items = list(rows)
    return items[offset : offset + limit], len(items)


class Queries(RealizerReadModels):
    """Lookups with access checks, and the list queries of API.md (the company-wide part's; the
    host part's are :class:`workspace_realizer.usecases.host.queries.WorkspaceQueries`)."""

    host_paths: HostPaths
    """The host's checks of the paths a project workspace names (wired by ``application.py``)."""

    def issue_followers(self, issue: Issue) -> list[Aggregate]:
        """What else changes, in the same save, with a change of ``issue`` (the host part moves
        the issue's open workspace along with its ``in_review`` status); none here."""
        return []

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

    # -- lists -----------------------------------------------------------------------------

    def list_projects(
        self, access: Access, company_id: str, limit: int, offset: int
    ) -> Page[Project]:
        """A company's projects, oldest first."""
        access.check_company(company_id, "company", company_id)
        rows = (p for p in self.projects.values() if p.company_id == company_id and not p.deleted)
        return page(sorted_by(rows, lambda p: (p.created_on, str(p.id))), limit, offset)

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
        return page(sorted_by(rows, lambda w: (w.created_on, str(w.id))), limit, offset)

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
        return page(
            sorted_by(rows, lambda i: (i.created_on, str(i.id)), reverse=True), limit, offset
        )


def sorted_by(
    rows: Iterable[T], key: Callable[[T], tuple[datetime, Any]], reverse: bool = False
) -> list[T]:
    return sorted(rows, key=key, reverse=reverse)
