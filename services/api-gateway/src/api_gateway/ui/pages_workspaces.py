"""``/workspaces``: the company's execution workspaces, filtered, with live rows.

The rows come from the same bus query as ``GET /api/companies/{companyId}/execution-workspaces``
(the realizer's list) and, per row, the runtime supervisor's facts (running / total services); a
supervisor that does not answer leaves the services column empty. The supervisor has no query for
many workspaces at once, so the per-row questions are bounded (:class:`ServiceCounts`: at most
:data:`COUNT_CONCURRENCY` at a time per gateway, and a question already in flight for a workspace
is shared by every refresh that needs it rather than asked again) and never re-probe health. A
time-based cache is deliberately not used: a live refresh follows a ``runtime_service.*`` event
and must show the state after it. The filters
(``?projectId=&status=&issueId=``) are the API's. ``?fragment=rows`` answers the table body only:
the page refetches it whenever a ``workspace.*`` or ``runtime_service.*`` event of the company
arrives (``live.js``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

from litestar import get
from litestar.di import NamedDependency
from litestar.params import QueryParameter
from litestar.response import Template

from api_gateway.controllers.events import EVENT_TYPES
from api_gateway.controllers.realizer import fetch, parse_choices
from api_gateway.controllers.runtime_facts import runtime_state
from api_gateway.dependencies import Gateway
from api_gateway.ui.fragments import check_fragment, render
from api_gateway.ui.lookups import gather
from api_gateway.ui.session import PageSession
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.execution_commands import ListExecutionWorkspaces, WorkspaceFilters
from contracts.execution_views import WORKSPACE_STATUSES, ExecutionWorkspaceRow
from contracts.workspace_commands import ListIssues, ListProjects
from contracts.workspace_views import Issue, Page, Project

__all__ = [
    "COUNT_CONCURRENCY",
    "FRAGMENTS",
    "LIVE_TYPES",
    "ROUTES",
    "ROW_LIMIT",
    "Filters",
    "ServiceCounts",
    "WorkspaceListRow",
    "list_rows",
    "workspaces_page",
]

FRAGMENTS: Final = {"rows": "_workspace_rows.html"}
ROW_LIMIT: Final = 200
COUNT_CONCURRENCY: Final = 8
"""Supervisor questions (one per row) in flight at once, per gateway."""
LIVE_TYPES: Final = tuple(
    sorted(t for t in EVENT_TYPES if t.startswith(("workspace.", "runtime_service.")))
)
"""The events that refresh the rows (every ``workspace.*`` and ``runtime_service.*`` type)."""


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


@dataclass
class ServiceCounts:
    """Running / total services per workspace, asked of the supervisor with bounded concurrency;
    one question in flight per workspace (and company) is shared by everyone who needs it."""

    concurrency: int = COUNT_CONCURRENCY
    _limit: asyncio.Semaphore | None = None
    _flying: dict[tuple[str, str], asyncio.Future[tuple[int, int] | None]] = field(
        default_factory=dict
    )

    async def _ask(
        self, gateway: Gateway, principal: Principal, workspace_id: str
    ) -> tuple[int, int] | None:
        if self._limit is None:
            self._limit = asyncio.Semaphore(self.concurrency)
        async with self._limit:
            facts = await runtime_state(gateway, principal, workspace_id=workspace_id)
        if facts.state is None:
            return None
        services = facts.state.runtime_services
        return sum(1 for one in services if one.status == "running"), len(services)

    async def of(
        self, gateway: Gateway, principal: Principal, workspace_id: str
    ) -> tuple[int, int] | None:
        """``(running, total)`` of a workspace's services (None: the supervisor did not answer)."""
        key = (principal.company_id or "", workspace_id)
        flying = self._flying.get(key)
        if flying is None:
            flying = asyncio.ensure_future(self._ask(gateway, principal, workspace_id))
            self._flying[key] = flying
            flying.add_done_callback(lambda _: self._flying.pop(key, None))
        return await asyncio.shield(flying)


async def _services(
    gateway: Gateway, principal: Principal, row: ExecutionWorkspaceRow, counts: ServiceCounts
) -> WorkspaceListRow:
    found = await counts.of(gateway, principal, row.id)
    if found is None:
        return WorkspaceListRow(row, None, None)
    return WorkspaceListRow(row, *found)


async def list_rows(
    gateway: Gateway,
    principal: Principal,
    filters: Filters,
    counts: ServiceCounts | None = None,
) -> tuple[list[WorkspaceListRow], int]:
    """The filtered workspaces (newest use first) with their services, and the total.

    Args:
        gateway: The gateway.
        principal: The session's principal.
        filters: The list's filters.
        counts: The gateway's shared :class:`ServiceCounts` (a fresh one when None).
    """
    counts = counts or ServiceCounts()
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
    rows = await gather(*(_services(gateway, principal, row, counts) for row in page.items))
    return list(rows), page.total


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
    service_counts: NamedDependency[ServiceCounts],
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
        rows, total = await list_rows(gateway, principal, filters, service_counts)
        return render(
            page_session,
            "workspaces.html",
            fragments=FRAGMENTS,
            fragment=fragment,
            rows=rows,
            total=total,
        )
    (rows, total), (projects, issues) = await gather(
        list_rows(gateway, principal, filters, service_counts), _choices(gateway, principal)
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
