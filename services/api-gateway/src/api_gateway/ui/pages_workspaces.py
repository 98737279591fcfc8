"""``/workspaces``: the company's execution workspaces, filtered, with live rows.

The rows come from the same bus query as ``GET /api/companies/{companyId}/execution-workspaces``
(the realizer's list) and their services (running / total) from one ``ListRuntimeSummaries``
question to the runtime supervisor for the whole page (:func:`service_counts`; health as last
probed, never re-probed). A row the supervisor leaves out, or every row when it does not answer,
shows its services as unknown. A time-based cache is deliberately not used: a live refresh
follows a ``runtime_service.*`` event and must show the state after it. The filters
(``?projectId=&status=&issueId=``) are the API's. ``?fragment=rows`` answers the table body only:
the page refetches it whenever a ``workspace.*`` or ``runtime_service.*`` event of the company
arrives (``live.js``). A workspace whose company is ``hostTrusted`` (``unconfined``: its commands
run on the host, outside any sandbox) is marked so in its row, and the page says what that means.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final

import msgspec
from litestar import get
from litestar.di import NamedDependency
from litestar.params import QueryParameter
from litestar.response import Template

from api_gateway.controllers.events import EVENT_TYPES
from api_gateway.controllers.realizer import fetch, parse_choices
from api_gateway.http.dependencies import Gateway
from api_gateway.ui.fragments import check_fragment, render
from api_gateway.ui.lookups import gather
from api_gateway.ui.session import PageSession
from contracts import workspace_subjects as subjects
from contracts.base import Ok, Principal
from contracts.execution_commands import ListExecutionWorkspaces, WorkspaceFilters
from contracts.execution_views import WORKSPACE_STATUSES, ExecutionWorkspaceRow
from contracts.runtime_commands import ListRuntimeSummaries, RuntimeSummaries
from contracts.runtime_subjects import RUNTIME_SUMMARIES
from contracts.workspace_commands import ListIssues, ListProjects
from contracts.workspace_views import Issue, Page, Project

__all__ = [
    "FRAGMENTS",
    "LIVE_TYPES",
    "ROUTES",
    "ROW_LIMIT",
    "Filters",
    "WorkspaceListRow",
    "list_rows",
    "service_counts",
    "workspaces_page",
]

FRAGMENTS: Final = {"rows": "_workspace_rows.html"}
ROW_LIMIT: Final = 200
"""Rows per page (also the most workspaces one ``ListRuntimeSummaries`` may name)."""
LIVE_TYPES: Final = tuple(
    sorted(t for t in EVENT_TYPES if t.startswith(("workspace.", "runtime_service.")))
)
"""The events that refresh the rows (every ``workspace.*`` and ``runtime_service.*`` type)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Filters:
    """The list's filters as the query string gave them (empty: any)."""

    project_id: str = ""
    status: str = ""
    issue_id: str = ""

    def to_query(self) -> WorkspaceFilters:
        """The bus query's filters (an unknown status answers 400 naming ``status``)."""
        return WorkspaceFilters(
            project_id=self.project_id or None,
            issue_id=self.issue_id or None,
            statuses=parse_choices(self.status or None, WORKSPACE_STATUSES, "status"),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class WorkspaceListRow:
    """One row: the workspace and its services (None: the supervisor did not answer)."""

    workspace: ExecutionWorkspaceRow
    running: int | None
    total: int | None


async def service_counts(
    gateway: Gateway, principal: Principal, workspace_ids: Sequence[str]
) -> dict[str, tuple[int, int]]:
    """``(running, total)`` services per workspace, in one question to the supervisor.

    Args:
        gateway: The gateway (its bus and query timeout).
        principal: Who asks (the supervisor answers for the principal's company only).
        workspace_ids: The workspaces (at most :data:`ROW_LIMIT`).

    Returns:
        The counts of the workspaces the supervisor answered for; empty when it did not answer
        (logged as a warning).
    """
    if not workspace_ids:
        return {}
    query = ListRuntimeSummaries(principal=principal, workspace_ids=list(workspace_ids))
    reply = await gateway.bus.request(
        RUNTIME_SUMMARIES, query, timeout=gateway.settings.query_timeout
    )
    if isinstance(reply, Ok):
        try:
            found = msgspec.convert(reply.result, RuntimeSummaries)
        except msgspec.ValidationError as exc:
            reason = f"an answer the gateway cannot read ({exc})"
        else:
            return {one.workspace_id: (one.running, one.total) for one in found.items}
    else:
        reason = getattr(reply, "code", "accepted")
    log.warning("runtime summaries of %d workspaces: no answer (%s)", len(workspace_ids), reason)
    return {}


async def list_rows(
    gateway: Gateway,
    principal: Principal,
    filters: Filters,
) -> tuple[list[WorkspaceListRow], int]:
    """The filtered workspaces (newest use first) with their services, and the total.

    Args:
        gateway: The gateway.
        principal: The session's principal.
        filters: The list's filters.
    """
    company_id = principal.company_id or ""
    query = ListExecutionWorkspaces(
        principal=principal,
        company_id=company_id,
        filters=filters.to_query(),
        limit=ROW_LIMIT,
        offset=0,
    )
    timeout = gateway.settings.query_timeout
    page = await fetch(
        gateway,
        subjects.WORKSPACE_LIST,
        query,
        Page[ExecutionWorkspaceRow],  # type: ignore[valid-type]
        timeout=timeout,
    )
    counts = await service_counts(gateway, principal, [row.id for row in page.items])
    rows = [WorkspaceListRow(row, *counts.get(row.id, (None, None))) for row in page.items]
    return rows, page.total


async def _choices(
    gateway: Gateway, principal: Principal
) -> tuple[Sequence[Project], Sequence[Issue]]:
    """The projects and issues the filters offer."""
    company_id = principal.company_id or ""
    timeout = gateway.settings.query_timeout
    projects, issues = await gather(
        fetch(
            gateway,
            subjects.PROJECT_LIST,
            ListProjects(principal=principal, company_id=company_id, limit=ROW_LIMIT),
            Page[Project],  # type: ignore[valid-type]
            timeout=timeout,
        ),
        fetch(
            gateway,
            subjects.ISSUE_LIST,
            ListIssues(principal=principal, company_id=company_id, limit=ROW_LIMIT),
            Page[Issue],  # type: ignore[valid-type]
            timeout=timeout,
        ),
    )
    return projects.items, issues.items


@get("/workspaces", name="ui-workspaces")
async def workspaces_page(
    gateway: NamedDependency[Gateway],
    page_session: NamedDependency[PageSession],
    project_id: Annotated[str, QueryParameter(name="projectId")] = "",
    status: Annotated[str, QueryParameter()] = "",
    issue_id: Annotated[str, QueryParameter(name="issueId")] = "",
    fragment: Annotated[str | None, QueryParameter()] = None,
) -> Template:
    """The workspaces page, or its rows (``?fragment=rows``)."""
    filters = Filters(project_id=project_id, status=status, issue_id=issue_id)
    check_fragment(fragment, FRAGMENTS)
    principal = page_session.principal
    if fragment is not None:
        rows, total = await list_rows(gateway, principal, filters)
        return render(
            page_session,
            "workspaces.html",
            fragments=FRAGMENTS,
            fragment=fragment,
            rows=rows,
            total=total,
        )
    (rows, total), (projects, issues) = await gather(
        list_rows(gateway, principal, filters), _choices(gateway, principal)
    )
    return render(
        page_session,
        "workspaces.html",
        nav="workspaces",
        rows=rows,
        total=total,
        filters=filters,
        projects=projects,
        issues=issues,
        statuses=WORKSPACE_STATUSES,
        live_types=",".join(LIVE_TYPES),
    )


ROUTES: Final[list[Any]] = [workspaces_page]
