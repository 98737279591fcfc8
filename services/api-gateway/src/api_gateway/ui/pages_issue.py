"""``/issues/{id}``: an issue, its "Workspace mode" selector and its current workspace.

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
from api_gateway.ui.fragments import render
from api_gateway.ui.issue_data import MODE_LABELS, load_issue_page
from api_gateway.ui.session import PageSession

__all__ = ["FRAGMENTS", "ROUTES", "issue_page"]

FRAGMENTS: Final = {"workspace": "_detail_issue_workspace.html"}
"""``?fragment=workspace``: the selector and the current workspace."""


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
    page = await load_issue_page(gateway, page_session.principal, issue_id)
    return render(
        page_session,
        "issue.html",
        fragments=FRAGMENTS,
        fragment=fragment,
        nav="issues",
        page=page,
        issue=page.issue,
        mode_labels=MODE_LABELS,
    )


ROUTES: Final = [issue_page]
"""The route handlers of this page (the UI router registers them)."""
