"""``/runs``: the company's heartbeat runs (agent, issue, status, stage, started, finished, error).

Rendered from the same bus query as ``GET /api/companies/{companyId}/runs`` (filter ``status``, one
at a time, as there); agents' names and issues' identifiers are looked up best effort. A run links
to its page (``/runs/{id}``, :mod:`api_gateway.ui.pages_run`). The rows follow the company's run
events live (``static/live.js``: a new run shows without a reload).
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from litestar import get
from litestar.di import NamedDependency
from litestar.params import QueryParameter
from litestar.response import Template

from api_gateway.controllers.events import EVENT_TYPES
from api_gateway.controllers.realizer import fetch, parse_choices
from api_gateway.controllers.runs import RUN_STATUSES
from api_gateway.http.dependencies import Gateway
from api_gateway.ui.fragments import check_fragment, render
from api_gateway.ui.lookups import agent_names, gather, issue_identifiers
from api_gateway.ui.session import PageSession
from contracts import heartbeat_subjects as subjects
from contracts.agents import ListRuns, RunFilters, RunView
from contracts.base import Principal
from contracts.workspace_views import Page

__all__ = ["FRAGMENTS", "ROUTES", "RUN_LIMIT", "list_runs", "runs_page"]

FRAGMENTS: Final = {"rows": "_run_rows.html"}
RUN_LIMIT: Final = 100
LIVE_TYPES: Final = tuple(sorted(t for t in EVENT_TYPES if t.startswith("run.")))
"""The events that change the rows: a run queued, started, moved to a stage, finished."""


async def list_runs(
    gateway: Gateway, principal: Principal, *, status: str = ""
) -> tuple[list[RunView], int]:
    """A page of the company's runs (newest first) and the total."""
    statuses = parse_choices(status or None, RUN_STATUSES, "status")[:1]
    filters = RunFilters(status=statuses[0] if statuses else None)  # type: ignore[arg-type]
    query = ListRuns(principal=principal, filters=filters, limit=RUN_LIMIT)
    page = await fetch(
        gateway,
        subjects.RUN_LIST,
        query,
        Page[RunView],  # type: ignore[valid-type]
        timeout=gateway.settings.query_timeout,
    )
    return list(page.items), page.total


@get("/runs", name="ui-runs")
async def runs_page(
    gateway: NamedDependency[Gateway],
    page_session: NamedDependency[PageSession],
    status: Annotated[str, QueryParameter()] = "",
    fragment: Annotated[str | None, QueryParameter()] = None,
) -> Template:
    """The runs page, or its rows (``?fragment=rows``)."""
    check_fragment(fragment, FRAGMENTS)
    principal = page_session.principal
    (runs, total), agents, issues = await gather(
        list_runs(gateway, principal, status=status),
        agent_names(gateway, principal),
        issue_identifiers(gateway, principal),
    )
    return render(
        page_session,
        "runs.html",
        fragments=FRAGMENTS,
        fragment=fragment,
        nav="runs",
        runs=runs,
        total=total,
        agents=agents,
        issues=issues,
        status=status,
        statuses=RUN_STATUSES,
        live_types=",".join(LIVE_TYPES),
    )


ROUTES: Final[list[Any]] = [runs_page]
