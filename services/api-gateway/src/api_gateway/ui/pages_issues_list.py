"""``/issues``: the company's issues (identifier, title, status, assignee, workspace), newest first.

Rendered from the same bus query as ``GET /api/companies/{companyId}/issues`` (filters ``status``
and ``projectId`` as there); agents' and workspaces' names are looked up best effort. Each issue
links to its page ``/issues/{id}``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from litestar import get
from litestar.di import NamedDependency
from litestar.params import QueryParameter
from litestar.response import Template

from api_gateway.controllers.realizer import fetch, parse_choices
from api_gateway.http.dependencies import Gateway
from api_gateway.ui.fragments import check_fragment, render
from api_gateway.ui.lookups import agent_names, gather, project_names, workspace_names
from api_gateway.ui.session import PageSession
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.workspace_commands import ListIssues
from contracts.workspace_views import ISSUE_STATUSES, Issue, Page

__all__ = ["FRAGMENTS", "ISSUE_LIMIT", "ROUTES", "issues_page", "list_issues"]

FRAGMENTS: Final = {"rows": "_issue_rows.html"}
ISSUE_LIMIT: Final = 200


async def list_issues(
    gateway: Gateway, principal: Principal, *, status: str = "", project_id: str = ""
) -> tuple[list[Issue], int]:
    """A page of the company's issues (newest first) and the total."""
    query = ListIssues(
        principal=principal,
        company_id=principal.company_id or "",
        project_id=project_id or None,
        statuses=parse_choices(status or None, ISSUE_STATUSES, "status"),  # type: ignore[arg-type]
        limit=ISSUE_LIMIT,
    )
    page = await fetch(
        gateway,
        subjects.ISSUE_LIST,
        query,
        Page[Issue],  # type: ignore[valid-type]
        timeout=gateway.settings.query_timeout,
    )
    return list(page.items), page.total


@get("/issues", name="ui-issues")
async def issues_page(
    gateway: NamedDependency[Gateway],
    page_session: NamedDependency[PageSession],
    status: Annotated[str, QueryParameter()] = "",
    project_id: Annotated[str, QueryParameter(name="projectId")] = "",
    fragment: Annotated[str | None, QueryParameter()] = None,
) -> Template:
    """The issues page, or its rows (``?fragment=rows``)."""
    check_fragment(fragment, FRAGMENTS)
    principal = page_session.principal
    (issues, total), agents, workspaces, projects = await gather(
        list_issues(gateway, principal, status=status, project_id=project_id),
        agent_names(gateway, principal),
        workspace_names(gateway, principal),
        project_names(gateway, principal),
    )
    return render(
        page_session,
        "issues.html",
        fragments=FRAGMENTS,
        fragment=fragment,
        nav="issues",
        issues=issues,
        total=total,
        agents=agents,
        workspaces=workspaces,
        projects=projects,
        status=status,
        statuses=ISSUE_STATUSES,
    )


ROUTES: Final[list[Any]] = [issues_page]
