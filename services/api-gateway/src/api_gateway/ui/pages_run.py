"""``/runs/{id}``: one heartbeat run. Its stages as a timeline with their times, its status, exit
code, error, usage and result, the adapter's log following while it runs, and Cancel.

The run is read with the same bus query as ``GET /api/runs/{id}`` (the controller checks the
company again: another company's run is 404, as there); names of its agent, issue and workspace
are looked up best effort. The page's script (``static/run.js``) reads the log by byte range from
``GET /api/runs/{id}/log`` while the run is queued or running, refreshes the summary
(``?fragment=summary``) on the run's live events, and cancels through ``POST
/api/runs/{id}/cancel``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final

from litestar import get
from litestar.di import NamedDependency
from litestar.params import FromPath, QueryParameter
from litestar.response import Template

from api_gateway.controllers.events import EVENT_TYPES
from api_gateway.controllers.realizer import fetch
from api_gateway.http.dependencies import Gateway
from api_gateway.ui.fragments import check_fragment, render
from api_gateway.ui.lookups import agent_names, gather, issue_identifiers, workspace_names
from api_gateway.ui.session import PageSession
from contracts import heartbeat_subjects as subjects
from contracts.agents import GetRun, RunStageEntry, RunView

__all__ = ["FRAGMENTS", "LIVE_TYPES", "ROUTES", "StageSpan", "run_page", "stage_spans"]

FRAGMENTS: Final = {"summary": "_run_summary.html"}
LIVE_TYPES: Final = tuple(sorted(t for t in EVENT_TYPES if t.startswith(("run.", "slot."))))
"""The event types the page listens to (it refreshes when one names this run)."""
ACTIVE: Final = frozenset({"queued", "running"})


class StageSpan:
    """A stage of the run's timeline: when it was entered and how long the run stayed."""

    def __init__(self, entry: RunStageEntry, left_at: datetime | None) -> None:
        self.stage = entry.stage
        self.entered_at = entry.entered_at
        self.left_at = left_at
        self.seconds = (left_at - entry.entered_at).total_seconds() if left_at else None


def stage_spans(run: RunView) -> list[StageSpan]:
    """The run's stages in order; each ends where the next begins, the last when the run ended
    (still open while it runs)."""
    entries = run.stages
    if not entries:  # a controller that keeps no stages yet (an older one, mid-upgrade)
        return []
    ends = [e.entered_at for e in entries[1:]] + [run.finished_at]
    return [StageSpan(entry, end) for entry, end in zip(entries, ends, strict=True)]


@get("/runs/{run_id:str}", name="ui-run")
async def run_page(
    run_id: FromPath[str],
    gateway: NamedDependency[Gateway],
    page_session: NamedDependency[PageSession],
    fragment: Annotated[str | None, QueryParameter()] = None,
) -> Template:
    """The run page, or its summary (``?fragment=summary``)."""
    check_fragment(fragment, FRAGMENTS)
    principal = page_session.principal
    run = await fetch(
        gateway, subjects.RUN_GET, GetRun(principal=principal, run_id=run_id), RunView
    )
    agents, issues, workspaces = await gather(
        agent_names(gateway, principal),
        issue_identifiers(gateway, principal),
        workspace_names(gateway, principal),
    )
    return render(
        page_session,
        "run.html",
        fragments=FRAGMENTS,
        fragment=fragment,
        nav="runs",
        run=run,
        active=run.status in ACTIVE,
        spans=stage_spans(run),
        agent_name=agents.get(run.agent_id, run.agent_id),
        issue_name=issues.get(run.issue_id or "", run.issue_id),
        workspace_name=workspaces.get(run.execution_workspace_id or "", run.execution_workspace_id),
        live_types=",".join(LIVE_TYPES),
    )


ROUTES: Final[list[Any]] = [run_page]
