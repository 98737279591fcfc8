"""``/workspaces/{id}``: one execution workspace, every section of docs/design/operator-page.md.

Sections (each also served alone as ``?fragment=<name>``, see :data:`SECTIONS`): summary, close
readiness, runtime services, jobs, configuration, operations, lifecycle, timeline and runs. The
page's script (``static/workspace.js``) calls the JSON API for actions and refreshes the affected
sections from their fragments, and on live events that name this workspace. A workspace whose
company is ``hostTrusted`` (``unconfined``: its commands run on the host, outside any sandbox) is
marked so in its heading and summary; the timeline reads egress events as one line
(:mod:`api_gateway.ui.timeline`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Final

from litestar import get
from litestar.di import NamedDependency
from litestar.params import FromPath, QueryParameter
from litestar.response import Template

from api_gateway.controllers.events import EVENT_TYPES
from api_gateway.http.dependencies import Gateway
from api_gateway.ui.fragments import render
from api_gateway.ui.session import PageSession
from api_gateway.ui.timeline import egress_of
from api_gateway.ui.workspace_data import SECTIONS, load_workspace_page
from contracts.event_types import event_label

__all__ = ["LIVE_EVENT_TYPES", "ROUTES", "SECTION_TITLES", "when", "workspace_detail_page"]

SECTION_TITLES: Final = {
    "summary": "Summary",
    "readiness": "Close readiness",
    "diff": "Changes",
    "services": "Runtime services",
    "jobs": "Jobs",
    "configuration": "Configuration",
    "operations": "Operations",
    "lifecycle": "Lifecycle",
    "timeline": "Timeline",
    "runs": "Runs",
}
"""Each section's ``<h2>``."""
FRAGMENTS: Final = {name: f"_detail_{name}.html" for name in SECTIONS}
LIVE_EVENT_TYPES: Final = tuple(
    sorted(
        one
        for one in EVENT_TYPES
        if one.split(".", 1)[0] in ("workspace", "runtime_service", "job", "run")
        or one == "operation.progressed.v1"
    )
)
"""The event types the page listens to (it refreshes when one names this workspace):
``operation.progressed.v1`` says a long step of it (a provision command, a job) began or ended."""


def when(moment: datetime | None) -> str:
    """A timestamp as the page shows it: ``2026-11-29 12:00:05 UTC`` (``—`` for none)."""
    if moment is None:
        return "—"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


@get(
    "/workspaces/{workspace_id:str}",
    name="ui-workspace-detail",
    include_in_schema=False,
)
async def workspace_detail_page(
    workspace_id: FromPath[str],
    gateway: NamedDependency[Gateway],
    page_session: NamedDependency[PageSession],
    fragment: Annotated[str | None, QueryParameter()] = None,
    operation_id: Annotated[str | None, QueryParameter(name="operationId")] = None,
    diff_path: Annotated[str | None, QueryParameter(name="diffPath", max_length=4096)] = None,
    types: Annotated[str | None, QueryParameter(max_length=4096)] = None,
) -> Template:
    """The workspace detail page, or one of its sections (``?fragment=<section>``; the "Jobs"
    section takes ``operationId`` to show that job run's output, ignored when the operation is
    not one of this workspace's; "Changes" takes ``diffPath``, a changed file whose unified diff it
    shows; "Timeline" takes ``types``, the filter of the API's events). Every fragment answers 404 for another company's or a missing
    workspace, as the page does; only the full page re-probes the services' health."""
    if fragment is not None and fragment not in FRAGMENTS:
        return render(page_session, "workspace_detail.html", fragments=FRAGMENTS, fragment=fragment)
    sections = SECTIONS if fragment is None else (fragment,)
    page = await load_workspace_page(
        gateway,
        page_session.principal,
        workspace_id,
        sections,
        operation_id=operation_id,
        diff_path=diff_path or None,
        event_types=types or None,
        probe_health=fragment is None,
    )
    return render(
        page_session,
        "workspace_detail.html",
        fragments=FRAGMENTS,
        fragment=fragment,
        nav="workspaces",
        page=page,
        ws=page.workspace,
        sections=SECTIONS,
        titles=SECTION_TITLES,
        when=when,
        egress_of=egress_of,
        event_label=event_label,
        live_types=",".join(LIVE_EVENT_TYPES),
    )


ROUTES: Final = [workspace_detail_page]
"""The route handlers of this page (the UI router registers them)."""
