"""What the workspace detail page shows, asked over the bus as the JSON API asks it.

Each section of ``/workspaces/{id}`` is loaded from the same bus requests its JSON endpoint
makes, with the session's principal (the services check the company again). The workspace itself
must load, for the whole page and for every fragment alike (its refusal, 404 for another
company's or a missing one, is the answer); any other section that cannot be loaded says so in its
place rather than failing the page. The operations and the timeline show the NEWEST rows
(``workspace_records.newest_rows``) and say how many there are in all. Only the full page load
re-probes the runtime services' health; the fragments the page refreshes live do not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Collection
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from api_gateway.controllers.realizer import fetch
from api_gateway.controllers.runtime_facts import close_readiness, workspace_detail
from api_gateway.dependencies import Gateway
from api_gateway.errors import BusReplyError
from api_gateway.ui.workspace_commands import (
    ConfigForm,
    ConfiguredCommand,
    ServiceRow,
    config_form,
    configured_commands,
    service_rows,
)
from api_gateway.ui.workspace_records import newest_rows, workspace_operation
from contracts import heartbeat_subjects
from contracts import workspace_subjects as subjects
from contracts.agents import ListRuns, RunFilters, RunView
from contracts.base import Principal
from contracts.execution_commands import (
    GetExecutionWorkspace,
    GetWorkspaceEvents,
    ListWorkspaceOperations,
)
from contracts.execution_views import (
    CloseReadiness,
    ExecutionWorkspace,
    WorkspaceEventRow,
    WorkspaceOperation,
    WorkspaceOperationDetail,
)
from contracts.runtime_commands import GetRuntimeServiceLog, RuntimeServiceLog
from contracts.runtime_subjects import RUNTIME_LOG
from contracts.workspace_commands import GetProjectWorkspace
from contracts.workspace_config import RuntimeConfig
from contracts.workspace_views import Page, ProjectWorkspace

__all__ = [
    "EVENT_WINDOW",
    "LOG_TAIL_LINES",
    "OPERATION_WINDOW",
    "SECTIONS",
    "WorkspacePage",
    "load_workspace_page",
]

T = TypeVar("T")

log = logging.getLogger(__name__)

SECTIONS: Final = (
    "summary",
    "readiness",
    "services",
    "jobs",
    "configuration",
    "operations",
    "lifecycle",
    "timeline",
    "runs",
)
"""The page's sections, in page order; each is a ``?fragment=<name>``."""
LOG_TAIL_LINES: Final = 40
EVENT_WINDOW: Final = 1000
"""The timeline shows the newest this many events."""
OPERATION_WINDOW: Final = 200
"""The operations section shows the newest this many operations."""
_RUN_WINDOW: Final = 50
_NEEDS_RUNTIME: Final = frozenset({"services"})
"""Sections that show the supervisor's runtime facts."""


@dataclass
class WorkspacePage:
    """Everything the page (or one fragment) renders; a section not asked for stays empty."""

    workspace_id: str
    workspace: ExecutionWorkspace | None = None
    warnings: list[str] = field(default_factory=list)
    """Sentences saying what could not be loaded (a service that did not answer)."""
    errors: dict[str, str] = field(default_factory=dict)
    """Per section: why it could not be loaded."""
    readiness: CloseReadiness | None = None
    commands: list[ConfiguredCommand] = field(default_factory=list)
    services: list[ServiceRow] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)
    """Runtime service id → the tail of its log."""
    job_operation: WorkspaceOperationDetail | None = None
    """The job run whose output the "Jobs" section shows."""
    job_runs: dict[str, WorkspaceOperation] = field(default_factory=dict)
    """Job command id → its latest run (a workspace operation)."""
    form: ConfigForm | None = None
    operations: list[WorkspaceOperation] = field(default_factory=list)
    """The newest operations, oldest first."""
    operations_total: int = 0
    """How many operations the workspace has in all."""
    events: list[WorkspaceEventRow] = field(default_factory=list)
    """The newest events, oldest first."""
    events_total: int = 0
    """How many events the workspace has in all."""
    runs: list[RunView] = field(default_factory=list)

    @property
    def jobs(self) -> list[ConfiguredCommand]:
        """The configured jobs."""
        return [one for one in self.commands if one.kind == "job"]


def _message(exc: BusReplyError) -> str:
    return exc.reply.message


async def _section(page: WorkspacePage, name: str, load: Awaitable[T]) -> T | None:
    """Await one section's data; a refusal is written into ``page.errors[name]``."""
    try:
        return await load
    except BusReplyError as exc:
        log.warning("workspace page %s, section %s: %s", page.workspace_id, name, exc)
        page.errors[name] = _message(exc)
        return None


async def _effective_runtime(
    gateway: Gateway, principal: Principal, workspace: ExecutionWorkspace
) -> RuntimeConfig | None:
    """The workspace's own runtime config, else its project workspace's."""
    if workspace.config is not None and workspace.config.workspace_runtime is not None:
        return workspace.config.workspace_runtime
    if workspace.project_workspace_id is None:
        return None
    query = GetProjectWorkspace(
        principal=principal,
        project_id=workspace.project_id,
        workspace_id=workspace.project_workspace_id,
    )
    project_workspace = await fetch(
        gateway, subjects.PROJECT_WORKSPACE_GET, query, ProjectWorkspace
    )
    return project_workspace.runtime_config


async def _log_tail(
    gateway: Gateway, principal: Principal, workspace_id: str, service_id: str
) -> str:
    query = GetRuntimeServiceLog(
        principal=principal, workspace_id=workspace_id, service_id=service_id, tail=LOG_TAIL_LINES
    )
    try:
        found = await fetch(
            gateway, RUNTIME_LOG, query, RuntimeServiceLog, timeout=gateway.settings.query_timeout
        )
    except BusReplyError as exc:
        return f"(The log could not be read: {exc.reply.message})"
    return found.text


async def _commands(
    gateway: Gateway, principal: Principal, page: WorkspacePage, section: str = "jobs"
) -> None:
    """The configured services and jobs (the workspace's runtime config, else its project's)."""
    workspace = page.workspace
    assert workspace is not None
    runtime = await _section(page, section, _effective_runtime(gateway, principal, workspace))
    page.commands = configured_commands(runtime)


async def _services(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    """The services table: configured services with their runtime rows and log tails."""
    workspace = page.workspace
    assert workspace is not None
    await _commands(gateway, principal, page, "services")
    page.services = service_rows(page.commands, list(workspace.runtime_services))
    ids = [row.runtime.id for row in page.services if row.runtime is not None]
    tails = await asyncio.gather(*(_log_tail(gateway, principal, workspace.id, i) for i in ids))
    page.logs = dict(zip(ids, tails, strict=True))


async def _runs(
    gateway: Gateway, principal: Principal, workspace: ExecutionWorkspace
) -> list[RunView]:
    issues = dict.fromkeys([workspace.source_issue_id, *workspace.linked_issue_ids])
    queries = [
        ListRuns(principal=principal, filters=RunFilters(issue_id=issue), limit=_RUN_WINDOW)
        for issue in issues
        if issue
    ]
    pages = await asyncio.gather(
        *(
            fetch(
                gateway,
                heartbeat_subjects.RUN_LIST,
                query,
                Page[RunView],
                timeout=gateway.settings.query_timeout,
            )
            for query in queries
        )
    )
    runs = {run.id: run for one in pages for run in one.items}
    held = [run for run in runs.values() if run.execution_workspace_id == workspace.id]
    return sorted(held, key=lambda run: run.queued_at, reverse=True)


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


async def load_workspace_page(
    gateway: Gateway,
    principal: Principal,
    workspace_id: str,
    sections: Collection[str] = SECTIONS,
    *,
    operation_id: str | None = None,
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
        probe_health: Re-probe the running services' health (the full page load only; live
            fragment refreshes read the health as last probed).

    Returns:
        The page's data; sections that could not be loaded are named in ``errors``.

    Raises:
        BusReplyError: The workspace itself could not be read (404 for another company's).
    """
    page = WorkspacePage(workspace_id=workspace_id)
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
    tasks: list[Awaitable[Any]] = []

    async def readiness() -> None:
        found = await _section(page, "readiness", close_readiness(gateway, principal, workspace_id))
        if found is not None:
            page.readiness, warning = found
            if warning:
                page.warnings.append(warning)

    async def operations() -> None:
        window = ListWorkspaceOperations(
            principal=principal, workspace_id=workspace_id, limit=OPERATION_WINDOW
        )
        tail = await _section(
            page,
            "operations",
            newest_rows(
                gateway,
                subjects.workspace_operations,
                window,
                WorkspaceOperation,
                lambda row: row.started_at,
                "workspace operations",
                page.warnings,
            ),
        )
        if tail is not None:
            page.operations, page.operations_total = tail.rows, tail.total

    async def timeline() -> None:
        window = GetWorkspaceEvents(
            principal=principal, workspace_id=workspace_id, limit=EVENT_WINDOW
        )
        tail = await _section(
            page,
            "timeline",
            newest_rows(
                gateway,
                subjects.workspace_events,
                window,
                WorkspaceEventRow,
                lambda row: row.occurred_at,
                "workspace events",
                page.warnings,
            ),
        )
        if tail is not None:
            page.events, page.events_total = tail.rows, tail.total

    async def runs() -> None:
        page.runs = await _section(page, "runs", _runs(gateway, principal, workspace)) or []

    if "readiness" in wanted:
        tasks.append(readiness())
    if wanted & {"operations", "jobs"}:
        tasks.append(operations())
    if "timeline" in wanted:
        tasks.append(timeline())
    if "services" in wanted:
        tasks.append(_services(gateway, principal, page))
    elif "jobs" in wanted:
        tasks.append(_commands(gateway, principal, page))
    if "runs" in wanted:
        tasks.append(runs())
    await asyncio.gather(*tasks)
    if "jobs" in wanted:
        await _job_output(gateway, principal, page, operation_id)
    return page


async def _job_output(
    gateway: Gateway, principal: Principal, page: WorkspacePage, operation_id: str | None
) -> None:
    """The last run of each job (the newest job operation of the operations log) and the output
    of the one asked for (when it is an operation of this workspace), else of the newest job run.
    """
    for row in sorted(page.operations, key=lambda row: row.started_at):
        if row.metadata.get("workspaceCommandKind") == "job":
            page.job_runs[str(row.metadata.get("workspaceCommandId", ""))] = row
    newest = max(page.job_runs.values(), key=lambda row: row.started_at, default=None)
    if operation_id is not None:
        asked = await _section(page, "jobs", workspace_operation(gateway, principal, operation_id))
        if asked is None or asked.execution_workspace_id == page.workspace_id:
            page.job_operation = asked  # None: the section says why it is missing
            return
        log.warning(
            "workspace page %s: operation %s is not one of its operations; showing the newest "
            "job run",
            page.workspace_id,
            operation_id,
        )
    if newest is not None:
        page.job_operation = await _section(
            page, "jobs", workspace_operation(gateway, principal, newest.id)
        )
