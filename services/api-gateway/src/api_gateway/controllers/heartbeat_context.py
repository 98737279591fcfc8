"""``GET /api/issues/{issueId}/heartbeat-context``: what an agent needs at the start of a run.

Composed by the gateway (ARCHITECTURE §1: an HTTP call becomes a few bus requests): the issue
from the workspace-realizer first (404 for another company's, 403 for an agent's issue that is
not its own), then at once its current execution workspace (the realizer's detail with the
runtime supervisor's services, :func:`workspace_detail`) and the run from the heartbeat
controller: a run token's own run, else the issue's newest run. A run token asks only about its
run's issue (the realizer answers 403 for another of its company, 404 for another company's).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Final

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.params import FromPath

from api_gateway.controllers.common import error_responses
from api_gateway.controllers.realizer import fetch
from api_gateway.controllers.runtime_facts import WARNING_HEADERS, warned, workspace_detail
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access
from contracts import heartbeat_subjects as hb
from contracts import workspace_subjects as ws
from contracts.agent_http import HeartbeatContext, HeartbeatWorkspace
from contracts.agents import GetRun, ListRuns, RunFilters, RunView
from contracts.base import Principal
from contracts.workspace_commands import GetIssue
from contracts.workspace_views import Issue, Page
from servicekit.access import Action, Resource

__all__ = ["HeartbeatContextController", "heartbeat_context"]

_ERRORS: Final = ("forbidden", "not_found", "service_unavailable", "timeout")


async def _workspace(
    gateway: Gateway, principal: Principal, workspace_id: str | None
) -> tuple[HeartbeatWorkspace | None, str | None]:
    if workspace_id is None:
        return None, None
    detail, warning = await workspace_detail(gateway, principal, workspace_id, probe_health=False)
    workspace = HeartbeatWorkspace(
        id=detail.id,
        cwd=detail.cwd,
        branch_name=detail.branch_name,
        base_ref=detail.base_ref,
        status=detail.status,
        runtime_services=detail.runtime_services,
        node_id=detail.node_id,
        node_state=detail.node_state,
    )
    return workspace, warning


async def _run(gateway: Gateway, principal: Principal, issue_id: str) -> RunView | None:
    if principal.run_bound and principal.run_id:
        query = GetRun(principal=principal, run_id=principal.run_id)
        return await fetch(gateway, hb.RUN_GET, query, RunView)
    newest = ListRuns(principal=principal, filters=RunFilters(issue_id=issue_id), limit=1)
    page = await fetch(
        gateway, hb.RUN_LIST, newest, Page[RunView], timeout=gateway.settings.query_timeout
    )
    return page.items[0] if page.items else None


async def heartbeat_context(
    gateway: Gateway, principal: Principal, issue_id: str
) -> tuple[HeartbeatContext, str | None]:
    """The issue, its current workspace and the run; and a warning when the supervisor's
    runtime services are missing from it.

    Raises:
        BusReplyError: The realizer or the controller refused, or did not answer.
    """
    issue = await fetch(
        gateway, ws.ISSUE_GET, GetIssue(principal=principal, issue_id=issue_id), Issue
    )
    (workspace, warning), run = await asyncio.gather(
        _workspace(gateway, principal, issue.execution_workspace_id),
        _run(gateway, principal, issue_id),
    )
    context = HeartbeatContext(
        issue=issue,
        current_execution_workspace=workspace,
        run=run,
        generated_at=datetime.now(UTC),
    )
    return context, warning


class HeartbeatContextController(Controller):
    """The composed view an agent reads when it wakes."""

    path = "/api"
    tags = ["runs"]

    @get(
        "/issues/{issue_id:str}/heartbeat-context",
        operation_id="getHeartbeatContext",
        opt=access(Resource.ISSUE, Action.READ),
        response_headers=WARNING_HEADERS,
        responses=error_responses(*_ERRORS),
    )
    async def get_heartbeat_context(
        self,
        issue_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> Response[HeartbeatContext]:
        """``{issue, currentExecutionWorkspace: {id, cwd, branchName, baseRef, status,
        runtimeServices[]} | null, run | null, generatedAt}``: the issue, its current execution
        workspace with its runtime services, and the run (for a run token: its own run; for
        other keys: the issue's newest run, as a list row without excerpts).

        Errors: 401; 403 (a run token asking about another issue than its run's; an agent's
        issue that is not its own); 404; 503; 504 (the realizer or the controller did not
        answer; a silent runtime supervisor only leaves ``runtimeServices`` empty, with
        ``X-Clipyard-Warning``).
        """
        context, warning = await heartbeat_context(gateway, principal, issue_id)
        return warned(context, warning)
