"""Reads of the host part's records (execution workspaces, workspace operations), each checking
that the principal may see what it asks for (ARCHITECTURE §5.1; the rules are those of
:mod:`workspace_realizer.usecases.queries`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from servicekit.access import AccessDeniedError
from workspace_realizer.domain.errors import InvalidInputError, NotFoundError
from workspace_realizer.domain.host.workspaces import REUSABLE_MODES
from workspace_realizer.usecases.queries import Page, Queries, page, sorted_by

if TYPE_CHECKING:
    from contracts.execution_commands import WorkspaceFilters
    from servicekit.access import Access
    from workspace_realizer.domain.host import ExecutionWorkspace, WorkspaceOperation

__all__ = ["WorkspaceQueries"]


class WorkspaceQueries(Queries):
    """Lookups and lists of execution workspaces and their operations."""

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
        order = sorted_by(rows, lambda w: (w.last_used_at, w.created_on), reverse=True)
        return page(order, limit, offset)

    def list_filtered(
        self, access: Access, company_id: str, f: WorkspaceFilters, limit: int, offset: int
    ) -> Page[ExecutionWorkspace]:
        """:meth:`list_workspaces` by a request's filters."""
        return self.list_workspaces(
            access,
            company_id,
            project_id=f.project_id,
            project_workspace_id=f.project_workspace_id,
            issue_id=f.issue_id,
            statuses=f.statuses,
            reuse_eligible=f.reuse_eligible,
            limit=limit,
            offset=offset,
        )

    def list_operations(
        self, access: Access, workspace_id: str, limit: int, offset: int
    ) -> Page[WorkspaceOperation]:
        """The operations recorded against a workspace, oldest first."""
        self.workspace_of(access, workspace_id)
        ids = self.operations_by_workspace.get(workspace_id, [])
        return page((self.operations[i] for i in ids), limit, offset)

    def workspace_events(
        self, access: Access, workspace_id: str, offset: int, limit: int | None
    ) -> tuple[list[Any], int]:
        """The workspace's stored events after version ``offset`` (at most ``limit``; None: all
        of them), and how many it has."""
        workspace = self.workspace_of(access, workspace_id)
        stored = self.events.get(UUID(workspace_id), gt=offset, limit=limit)
        return list(stored), workspace.version

    def workspace_at(
        self, access: Access, workspace_id: str, version: int | None, at: datetime | None
    ) -> ExecutionWorkspace:
        """The workspace as it stood at ``version``, or at the time ``at`` (exactly one given).

        Raises:
            InvalidInputError: Both or neither given.
            NotFoundError: The workspace did not exist yet then.
        """
        self.workspace_of(access, workspace_id)
        if (version is None) == (at is None):
            raise InvalidInputError("Give exactly one of version and at.", field="version")
        if at is not None:
            when = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
            stored = self.events.get(UUID(workspace_id))
            found = [ev for ev in stored if getattr(ev, "timestamp", when) <= when]
            version = found[-1].originator_version if found else None
        if version is None or version < 1:
            raise NotFoundError("The workspace did not exist yet then.", workspaceId=workspace_id)
        then: ExecutionWorkspace = self.repository.get(UUID(workspace_id), version=version)
        return then


def _reusable(workspace: ExecutionWorkspace) -> bool:
    return workspace.is_open and not workspace.closing and workspace.mode in REUSABLE_MODES
