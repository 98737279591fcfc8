"""What the workspace detail page shows, asked over the bus as the JSON API asks it.

Each section of ``/workspaces/{id}`` is loaded from the same bus requests its JSON endpoint
makes, with the session's principal (the services check the company again). The workspace itself
must load (its refusal, 404 for another company's, is the page's answer); any other section that
cannot be loaded says so in its place rather than failing the page.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from api_gateway.controllers.realizer import fetch
from api_gateway.controllers.runtime_facts import close_readiness, workspace_detail
from api_gateway.controllers.workspace_audit import OPERATION_SOURCES
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
from contracts import heartbeat_subjects
from contracts import workspace_subjects as subjects
from contracts.agents import ListRuns, RunFilters, RunView
from contracts.base import Principal
from contracts.execution_commands import (
    GetWorkspaceEvents,
    GetWorkspaceOperation,
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

__all__ = ["LOG_TAIL_LINES", "SECTIONS", "WorkspacePage", "load_workspace_page"]

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
_EVENT_WINDOW: Final = 1000
_OPERATION_WINDOW: Final = 200
_RUN_WINDOW: Final = 50
_NEEDS_WORKSPACE: Final = frozenset(
    {"summary", "services", "jobs", "configuration", "lifecycle", "runs"}
)


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
    events: list[WorkspaceEventRow] = field(default_factory=list)
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


async def _merged(
    gateway: Gateway,
    subject_of: Callable[[Any], str],
    message: Any,
    row: type[T],
    what: str,
    warnings: list[str],
) -> list[T]:
    """The rows every operation source holds, unsorted; the workspace owner's refusal raises,
    another source's is a warning."""

    async def ask(source: Any) -> list[T]:
        try:
            answer = await fetch(
                gateway,
                subject_of(source),
                message,
                Page[row],
                timeout=gateway.settings.query_timeout,
            )
        except BusReplyError as exc:
            if source == OPERATION_SOURCES[0]:
                raise
            if exc.reply.code != "not_found":
                warnings.append(f"Some {what} are not shown: {exc.reply.message}")
            return []
        return list(answer.items)

    found = await asyncio.gather(*(ask(source) for source in OPERATION_SOURCES))
    return [one for rows in found for one in rows]


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


async def _services(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    workspace = page.workspace
    assert workspace is not None
    runtime = await _section(page, "services", _effective_runtime(gateway, principal, workspace))
    page.commands = configured_commands(runtime)
    page.services = service_rows(page.commands, list(workspace.runtime_services))
    ids = [row.runtime.id for row in page.services if row.runtime is not None]
    tails = await asyncio.gather(*(_log_tail(gateway, principal, workspace.id, i) for i in ids))
    page.logs = dict(zip(ids, tails, strict=True))


async def _operation(
    gateway: Gateway, principal: Principal, operation_id: str
) -> WorkspaceOperationDetail:
    """One workspace operation with its output, from whichever source holds it."""
    query = GetWorkspaceOperation(principal=principal, operation_id=operation_id)
    refusal: BusReplyError | None = None
    for source in OPERATION_SOURCES:
        try:
            return await fetch(
                gateway,
                subjects.workspace_operation(source),
                query,
                WorkspaceOperationDetail,
                timeout=gateway.settings.query_timeout,
            )
        except BusReplyError as exc:
            refusal = refusal if refusal and exc.reply.code == "not_found" else exc
    assert refusal is not None
    raise refusal


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


async def load_workspace_page(
    gateway: Gateway,
    principal: Principal,
    workspace_id: str,
    sections: Collection[str] = SECTIONS,
    *,
    operation_id: str | None = None,
) -> WorkspacePage:
    """Load what ``sections`` of the workspace page show.

    Args:
        gateway: The gateway (its bus and timeouts).
        principal: The session's principal.
        workspace_id: The execution workspace.
        sections: Which sections (names of :data:`SECTIONS`).
        operation_id: A job's workspace operation whose output the "Jobs" section shows.

    Returns:
        The page's data; sections that could not be loaded are named in ``errors``.

    Raises:
        BusReplyError: The workspace itself could not be read (404 for another company's).
    """
    page = WorkspacePage(workspace_id=workspace_id)
    if _NEEDS_WORKSPACE & set(sections) or not sections:
        probe = "summary" in sections or "services" in sections
        workspace, warning = await workspace_detail(
            gateway, principal, workspace_id, probe_health=probe
        )
        page.workspace = workspace
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
            principal=principal, workspace_id=workspace_id, limit=_OPERATION_WINDOW
        )
        rows = await _section(
            page,
            "operations",
            _merged(
                gateway,
                subjects.workspace_operations,
                window,
                WorkspaceOperation,
                "workspace operations",
                page.warnings,
            ),
        )
        page.operations = sorted(rows or [], key=lambda row: row.started_at)

    async def timeline() -> None:
        window = GetWorkspaceEvents(
            principal=principal, workspace_id=workspace_id, limit=_EVENT_WINDOW
        )
        rows = await _section(
            page,
            "timeline",
            _merged(
                gateway,
                subjects.workspace_events,
                window,
                WorkspaceEventRow,
                "workspace events",
                page.warnings,
            ),
        )
        page.events = sorted(rows or [], key=lambda row: row.occurred_at)

    async def runs() -> None:
        assert page.workspace is not None
        page.runs = await _section(page, "runs", _runs(gateway, principal, page.workspace)) or []

    if "readiness" in sections:
        tasks.append(readiness())
    if "operations" in sections or "jobs" in sections:
        tasks.append(operations())
    if "timeline" in sections:
        tasks.append(timeline())
    if page.workspace is not None:
        if "services" in sections or "jobs" in sections:
            tasks.append(_services(gateway, principal, page))
        if "runs" in sections:
            tasks.append(runs())
        page.form = config_form(page.workspace.config)
    await asyncio.gather(*tasks)
    if "jobs" in sections:
        await _job_output(gateway, principal, page, operation_id)
    return page


async def _job_output(
    gateway: Gateway, principal: Principal, page: WorkspacePage, operation_id: str | None
) -> None:
    """The last run of each job (from the operations log) and the output of the one asked for,
    else of the latest job run."""
    for row in page.operations:
        if row.metadata.get("workspaceCommandKind") == "job":
            page.job_runs[str(row.metadata.get("workspaceCommandId", ""))] = row
    wanted = operation_id or max(
        page.job_runs.values(), key=lambda row: row.started_at, default=None
    )
    if wanted is None:
        return
    target = wanted if isinstance(wanted, str) else wanted.id
    page.job_operation = await _section(page, "jobs", _operation(gateway, principal, target))
