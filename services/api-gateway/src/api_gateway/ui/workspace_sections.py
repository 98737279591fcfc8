"""The loaders of the workspace detail page's sections, each asked over the bus as the JSON API
asks it, with the session's principal (the services check the company again).

Each fills its part of a :class:`~api_gateway.ui.workspace_page.WorkspacePage` whose workspace is
loaded already; a refusal is written in the section's place (``load_section``). The operations
and the timeline show the NEWEST rows (``workspace_records.newest_rows``) and say how many there
are in all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from api_gateway.controllers.realizer import fetch
from api_gateway.controllers.runtime_facts import close_readiness
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from api_gateway.ui.lookups import agent_names, issue_runs, key_names
from api_gateway.ui.workspace_commands import (
    configured_commands,
    inherited_runtime,
    service_rows,
)
from api_gateway.ui.workspace_page import (
    EVENT_WINDOW,
    LOG_TAIL_LINES,
    OPERATION_WINDOW,
    RUN_WINDOW,
    WorkspacePage,
    load_section,
)
from api_gateway.ui.workspace_records import newest_rows, workspace_operation
from contracts import workspace_subjects as subjects
from contracts.agents import RunView
from contracts.base import Principal
from contracts.event_filters import UnknownEventFilterError, parse_event_filter
from contracts.execution_commands import GetWorkspaceEvents, ListWorkspaceOperations
from contracts.execution_views import ExecutionWorkspace, WorkspaceEventRow, WorkspaceOperation
from contracts.runtime_commands import GetRuntimeServiceLog, RuntimeServiceLog
from contracts.runtime_subjects import RUNTIME_LOG
from contracts.workspace_commands import GetProjectWorkspace
from contracts.workspace_config import RuntimeConfig
from contracts.workspace_diff import GetWorkspaceDiff, WorkspaceDiff
from contracts.workspace_views import ProjectWorkspace

__all__ = [
    "load_agent_names",
    "load_commands",
    "load_diff",
    "load_inherited_runtime",
    "load_job_output",
    "load_key_names",
    "load_operations",
    "load_readiness",
    "load_runs",
    "load_services",
    "load_timeline",
]

log = logging.getLogger(__name__)


def _workspace_of(page: WorkspacePage) -> ExecutionWorkspace:
    workspace = page.workspace
    assert workspace is not None
    return workspace


def _own_runtime(workspace: ExecutionWorkspace) -> RuntimeConfig | None:
    """The workspace's own runtime config (None: it inherits its project workspace's)."""
    return workspace.config.workspace_runtime if workspace.config is not None else None


async def _project_workspace(
    gateway: Gateway, principal: Principal, workspace: ExecutionWorkspace
) -> ProjectWorkspace | None:
    """The project workspace the workspace was realized from (None: it names none)."""
    if workspace.project_workspace_id is None:
        return None
    query = GetProjectWorkspace(
        principal=principal,
        project_id=workspace.project_id,
        workspace_id=workspace.project_workspace_id,
    )
    return await fetch(gateway, subjects.PROJECT_WORKSPACE_GET, query, ProjectWorkspace)


async def _effective_runtime(
    gateway: Gateway, principal: Principal, workspace: ExecutionWorkspace
) -> RuntimeConfig | None:
    """The workspace's own runtime config, else its project workspace's."""
    own = _own_runtime(workspace)
    if own is not None:
        return own
    project_workspace = await _project_workspace(gateway, principal, workspace)
    return project_workspace.runtime_config if project_workspace is not None else None


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


async def load_commands(
    gateway: Gateway, principal: Principal, page: WorkspacePage, section: str = "jobs"
) -> None:
    """The configured services and jobs (the workspace's runtime config, else its project's)."""
    workspace = _workspace_of(page)
    runtime = await load_section(page, section, _effective_runtime(gateway, principal, workspace))
    page.commands = configured_commands(runtime)


async def load_inherited_runtime(
    gateway: Gateway, principal: Principal, page: WorkspacePage
) -> None:
    """The project workspace's runtime config the "Configuration" section shows, read-only, when
    the workspace has none of its own."""
    workspace = _workspace_of(page)
    if _own_runtime(workspace) is not None:
        return
    found = await load_section(page, "configuration", _still_there(gateway, principal, workspace))
    if found is not None:
        page.inherited = inherited_runtime(found)


async def _still_there(
    gateway: Gateway, principal: Principal, workspace: ExecutionWorkspace
) -> ProjectWorkspace | None:
    """The project workspace, or None once it was deleted (a closed workspace may outlive it:
    then nothing is inherited, which is no error of the section)."""
    try:
        return await _project_workspace(gateway, principal, workspace)
    except BusReplyError as exc:
        if exc.reply.code == "not_found":
            return None
        raise


async def load_services(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    """The services table: configured services with their runtime rows and log tails."""
    workspace = _workspace_of(page)
    await load_commands(gateway, principal, page, "services")
    page.services = service_rows(page.commands, list(workspace.runtime_services))
    ids = [row.runtime.id for row in page.services if row.runtime is not None]
    tails = await asyncio.gather(*(_log_tail(gateway, principal, workspace.id, i) for i in ids))
    page.logs = dict(zip(ids, tails, strict=True))


async def load_readiness(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    """Whether the workspace may close, and why not."""
    found = await load_section(
        page, "readiness", close_readiness(gateway, principal, page.workspace_id)
    )
    if found is not None:
        page.readiness, warning = found
        if warning:
            page.warnings.append(warning)


async def load_diff(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    """What the workspace changed against its base, with the unified diff of ``page.diff_path``
    (a path the diff does not list: the lists alone, and the section says why)."""

    def ask(path: str | None) -> Awaitable[WorkspaceDiff]:
        query = GetWorkspaceDiff(principal=principal, workspace_id=page.workspace_id, path=path)
        return fetch(gateway, subjects.WORKSPACE_DIFF, query, WorkspaceDiff)

    if page.diff_path is not None:
        try:
            page.diff = await ask(page.diff_path)
            return
        except BusReplyError as exc:
            if exc.reply.code != "not_found":
                page.errors["diff"] = exc.reply.message
                return
            page.diff_refused, page.diff_path = exc.reply.message, None
    page.diff = await load_section(page, "diff", ask(None))


async def load_operations(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    """The newest workspace operations, and how many there are in all."""
    window = ListWorkspaceOperations(
        principal=principal, workspace_id=page.workspace_id, limit=OPERATION_WINDOW
    )
    tail = await load_section(
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


async def load_timeline(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    """The newest workspace events (of the types ``page.event_types`` names), and how many
    there are in all; an unknown type is the section's error."""
    try:
        wanted = parse_event_filter(page.event_types, name="?types=")
    except UnknownEventFilterError as exc:
        page.errors["timeline"] = str(exc)
        return
    window = GetWorkspaceEvents(
        principal=principal,
        workspace_id=page.workspace_id,
        limit=EVENT_WINDOW,
        types=list(wanted.values) if wanted is not None else None,
    )
    tail = await load_section(
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


async def load_agent_names(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    """The company's agents by name (best effort: ids are shown when the controller is away)."""
    page.agents = await agent_names(gateway, principal)


async def load_key_names(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    """The company's board keys by name (the timeline's actors)."""
    page.keys = await key_names(gateway, principal)


async def load_runs(gateway: Gateway, principal: Principal, page: WorkspacePage) -> None:
    """The runs that held the workspace, newest first."""
    runs = _runs(gateway, principal, _workspace_of(page))
    page.runs = await load_section(page, "runs", runs) or []


async def _runs(
    gateway: Gateway, principal: Principal, workspace: ExecutionWorkspace
) -> list[RunView]:
    issues = dict.fromkeys([workspace.source_issue_id, *workspace.linked_issue_ids])
    pages = await asyncio.gather(
        *(issue_runs(gateway, principal, issue, RUN_WINDOW) for issue in issues if issue)
    )
    runs = {run.id: run for one in pages for run in one}
    held = [run for run in runs.values() if run.execution_workspace_id == workspace.id]
    return sorted(held, key=lambda run: run.queued_at, reverse=True)


async def load_job_output(
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
        asked = await load_section(
            page, "jobs", workspace_operation(gateway, principal, operation_id)
        )
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
        page.job_operation = await load_section(
            page, "jobs", workspace_operation(gateway, principal, newest.id)
        )
