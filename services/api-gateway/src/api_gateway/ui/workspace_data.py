"""What the workspace detail page shows, asked over the bus as the JSON API asks it.

Each section of ``/workspaces/{id}`` is loaded from the same bus requests its JSON endpoint
makes, with the session's principal (the services check the company again). The workspace itself
must load, for the whole page and for every fragment alike (its refusal, 404 for another
company's or a missing one, is the answer); any other section that cannot be loaded says so in its
place rather than failing the page (:mod:`api_gateway.ui.workspace_sections` loads each). Only
the full page load re-probes the runtime services' health; the fragments the page refreshes live
do not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Collection
from typing import Final

from api_gateway.controllers.realizer import fetch
from api_gateway.controllers.runtime_facts import workspace_detail
from api_gateway.http.dependencies import Gateway
from api_gateway.ui.workspace_commands import config_form
from api_gateway.ui.workspace_page import (
    EVENT_WINDOW,
    LOG_TAIL_LINES,
    OPERATION_WINDOW,
    SECTIONS,
    WorkspacePage,
)
from api_gateway.ui.workspace_sections import (
    load_agent_names,
    load_commands,
    load_diff,
    load_inherited_runtime,
    load_job_output,
    load_key_names,
    load_operations,
    load_readiness,
    load_runs,
    load_services,
    load_timeline,
)
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.execution_commands import GetExecutionWorkspace
from contracts.execution_views import ExecutionWorkspace

__all__ = [
    "EVENT_WINDOW",
    "LOG_TAIL_LINES",
    "OPERATION_WINDOW",
    "SECTIONS",
    "WorkspacePage",
    "load_workspace_page",
]

_NEEDS_RUNTIME: Final = frozenset({"services"})
"""Sections that show the supervisor's runtime facts."""


async def _workspace(
    gateway: Gateway,
    principal: Principal,
    workspace_id: str,
    *,
    runtime: bool,
    probe_health: bool,
) -> tuple[ExecutionWorkspace, str | None]:
    """The workspace (the realizer's 404 for another company's or a missing one is raised), with
    the supervisor's runtime facts when ``runtime`` (re-probed only when ``probe_health``)."""
    if runtime:
        return await workspace_detail(gateway, principal, workspace_id, probe_health=probe_health)
    query = GetExecutionWorkspace(principal=principal, workspace_id=workspace_id)
    return await fetch(gateway, subjects.WORKSPACE_GET, query, ExecutionWorkspace), None


def _section_loads(
    gateway: Gateway, principal: Principal, page: WorkspacePage, wanted: set[str]
) -> list[Awaitable[None]]:
    """The loads of the ``wanted`` sections, to run together (the jobs' output comes after)."""
    loads: list[Awaitable[None]] = []
    if "readiness" in wanted:
        loads.append(load_readiness(gateway, principal, page))
    if "diff" in wanted:
        loads.append(load_diff(gateway, principal, page))
    if wanted & {"operations", "jobs"}:
        loads.append(load_operations(gateway, principal, page))
    if "timeline" in wanted:
        loads.append(load_timeline(gateway, principal, page))
        loads.append(load_key_names(gateway, principal, page))
    if "configuration" in wanted:
        loads.append(load_inherited_runtime(gateway, principal, page))
    if "services" in wanted:
        loads.append(load_services(gateway, principal, page))
    elif "jobs" in wanted:
        loads.append(load_commands(gateway, principal, page))
    if "runs" in wanted:
        loads.append(load_runs(gateway, principal, page))
    if wanted & {"timeline", "runs"}:
        loads.append(load_agent_names(gateway, principal, page))
    return loads


async def load_workspace_page(
    gateway: Gateway,
    principal: Principal,
    workspace_id: str,
    sections: Collection[str] = SECTIONS,
    *,
    operation_id: str | None = None,
    diff_path: str | None = None,
    event_types: str | None = None,
    probe_health: bool = False,
) -> WorkspacePage:
    """Load what ``sections`` of the workspace page show.

    The workspace is read first whatever the sections (so any section of another company's or a
    missing workspace answers 404 as the whole page does); the sections are then loaded together.

    Args:
        gateway: The gateway (its bus and timeouts).
        principal: The session's principal.
        workspace_id: The execution workspace.
        sections: Which sections (names of :data:`SECTIONS`).
        operation_id: A job's workspace operation whose output the "Jobs" section shows; one
            that belongs to another workspace is ignored (the newest job run is shown instead).
        diff_path: A changed file whose unified diff the "Changes" section shows.
        event_types: The timeline's filter (``contracts.event_filters``; None: every event).
        probe_health: Re-probe the running services' health (the full page load only; live
            fragment refreshes read the health as last probed).

    Returns:
        The page's data; sections that could not be loaded are named in ``errors``.

    Raises:
        BusReplyError: The workspace itself could not be read (404 for another company's).
    """
    page = WorkspacePage(workspace_id=workspace_id, diff_path=diff_path, event_types=event_types)
    wanted = set(sections)
    workspace, warning = await _workspace(
        gateway,
        principal,
        workspace_id,
        runtime=bool(_NEEDS_RUNTIME & wanted),
        probe_health=probe_health,
    )
    page.workspace = workspace
    page.form = config_form(workspace.config)
    if warning:
        page.warnings.append(warning)
    await asyncio.gather(*_section_loads(gateway, principal, page, wanted))
    if "jobs" in wanted:
        await load_job_output(gateway, principal, page, operation_id)
    return page
