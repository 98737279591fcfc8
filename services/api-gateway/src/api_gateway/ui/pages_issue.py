"""``/issues/{id}``: an issue, its status and assignee (changed from the page), its "Workspace mode"
selector, its current workspace and its runs.

Saving the status and assignee PATCHes ``/api/issues/{id}`` (``static/issue_forms.js``) and
re-renders the facts (``?fragment=facts``); agents show by name.

The selector's options come from :mod:`api_gateway.ui.issue_data`; choosing one PATCHes
``/api/issues/{id}`` with ``{executionWorkspaceSettings: {mode, executionWorkspaceId?}}``
(``static/issue.js``), and the page says "Saved" or shows the API's error next to the selector.
"""

from __future__ import annotations

from typing import Annotated, Final

from litestar import get
from litestar.di import NamedDependency
from litestar.params import FromPath, QueryParameter
from litestar.response import Template

from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from api_gateway.ui.fragments import render
from api_gateway.ui.issue_data import MODE_LABELS, load_issue_page
from api_gateway.ui.lookups import agent_names, gather, issue_runs
from api_gateway.ui.session import PageSession
from contracts.agents import RunView
from contracts.base import Principal
from contracts.workspace_views import ISSUE_STATUSES

__all__ = ["FRAGMENTS", "ROUTES", "issue_page"]

FRAGMENTS: Final = {"workspace": "_detail_issue_workspace.html", "facts": "_issue_facts.html"}
"""``?fragment=workspace``: the selector and the current workspace; ``facts``: status, assignee."""
RUN_WINDOW: Final = 20
"""The issue's newest runs the page lists."""


@get("/issues/{issue_id:str}", name="ui-issue", include_in_schema=False)
async def issue_page(
    issue_id: FromPath[str],
    gateway: NamedDependency[Gateway],
    page_session: NamedDependency[PageSession],
    fragment: Annotated[str | None, QueryParameter()] = None,
) -> Template:
    """The issue page, or its workspace section (``?fragment=workspace``)."""
    if fragment is not None and fragment not in FRAGMENTS:
        return render(page_session, "issue.html", fragments=FRAGMENTS, fragment=fragment)
    principal = page_session.principal
    page = await load_issue_page(gateway, principal, issue_id)
    agents, runs = await gather(
        agent_names(gateway, principal), _runs(gateway, principal, issue_id)
    )
    return render(
        page_session,
        "issue.html",
        fragments=FRAGMENTS,
        fragment=fragment,
        nav="issues",
        page=page,
        issue=page.issue,
        mode_labels=MODE_LABELS,
        agents=agents,
        runs=runs,
        statuses=ISSUE_STATUSES,
    )


async def _runs(gateway: Gateway, principal: Principal, issue_id: str) -> list[RunView]:
    """The issue's newest runs (none when the controller does not answer: the page still shows)."""
    try:
        return await issue_runs(gateway, principal, issue_id, RUN_WINDOW)
    except BusReplyError:
        return []


ROUTES: Final = [issue_page]
"""The route handlers of this page (the UI router registers them)."""
