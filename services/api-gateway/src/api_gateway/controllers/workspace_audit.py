"""A workspace's record: its operations (with output), its events and its history.

Workspace operations and audit trails are stored by whichever service did the work
(ARCHITECTURE §1); :data:`OPERATION_SOURCES` lists the services asked. Today that is the
workspace-realizer; the runtime issue adds the supervisor (then lists are merged by start time).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Final, Literal, TypeVar

from litestar import Controller, Response, get
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter

from api_gateway.controllers.common import (
    TOTAL_COUNT,
    Page,
    error_responses,
    listing,
    provide_page,
)
from api_gateway.controllers.realizer import InvalidRequestError, company_key, fetch, fetch_page
from api_gateway.dependencies import Gateway
from api_gateway.domain import NotFoundError
from api_gateway.errors import BusReplyError
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.execution_commands import (
    GetWorkspaceEvents,
    GetWorkspaceHistory,
    GetWorkspaceOperation,
    GetWorkspaceOperationOutput,
    ListWorkspaceOperations,
)
from contracts.execution_views import (
    WorkspaceEventRow,
    WorkspaceHistory,
    WorkspaceOperation,
    WorkspaceOperationDetail,
    WorkspaceOperationOutput,
)
from contracts.subjects import ServiceToken
from contracts.workspace_views import Page as RowPage

__all__ = ["OPERATION_SOURCES", "WorkspaceAuditController"]

T = TypeVar("T")

OPERATION_SOURCES: Final[tuple[ServiceToken, ...]] = ("realizer",)
"""The services that record workspace operations and workspace events (the supervisor joins
with the runtime issue, the controller with the heartbeat issue)."""

MAX_OUTPUT_BYTES: Final = 256 * 1024
_ERRORS = ("forbidden", "not_found", "timeout")


async def _first_found(
    gateway: Gateway, subject_of: Any, message: Any, view: type[T], what: str
) -> T:
    """Ask every source; the first ``ok`` wins; 404 when none knows it."""
    calls = [fetch(gateway, subject_of(source), message, view) for source in OPERATION_SOURCES]
    answers = await asyncio.gather(*calls, return_exceptions=True)
    for answer in answers:
        if isinstance(answer, BusReplyError) and answer.reply.code == "not_found":
            continue
        if isinstance(answer, BaseException):
            raise answer
        return answer
    raise NotFoundError(f"There is no {what}.")


async def _merged_page(
    gateway: Gateway, principal: Principal, workspace_id: str, page: Page
) -> Response[Sequence[WorkspaceOperation]]:
    """One page of the operations of every source, ordered by start time."""
    if len(OPERATION_SOURCES) == 1:
        query = ListWorkspaceOperations(
            principal=principal, workspace_id=workspace_id, limit=page.limit, offset=page.offset
        )
        subject = subjects.workspace_operations(OPERATION_SOURCES[0])
        return await fetch_page(gateway, subject, query, WorkspaceOperation)
    window = ListWorkspaceOperations(
        principal=principal, workspace_id=workspace_id, limit=page.offset + page.limit, offset=0
    )
    pages = await asyncio.gather(
        *(
            fetch(
                gateway,
                subjects.workspace_operations(source),
                window,
                RowPage[WorkspaceOperation],
                timeout=gateway.settings.query_timeout,
            )
            for source in OPERATION_SOURCES
        )
    )
    rows = sorted((row for one in pages for row in one.items), key=lambda row: row.started_at)
    return listing(rows[page.offset : page.offset + page.limit], sum(one.total for one in pages))


class WorkspaceAuditController(Controller):
    """What happened to a workspace: host steps with their output, events, past states."""

    path = "/api"
    tags = ["execution-workspaces"]
    guards = [company_key]

    @get(
        "/execution-workspaces/{workspace_id:str}/workspace-operations",
        operation_id="listWorkspaceOperations",
        dependencies={"page": Provide(provide_page, sync_to_thread=False)},
        response_headers=TOTAL_COUNT,
        responses=error_responses(*_ERRORS),
    )
    async def list_workspace_operations(
        self,
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[WorkspaceOperation]]:
        """The git and shell steps run against a workspace, oldest first: ``{id, phase, command,
        cwd, status, exitCode, startedAt, finishedAt, runId, source}`` (no output on rows).

        Errors: 400 (``limit``); 401; 403; 404.
        """
        return await _merged_page(gateway, principal, workspace_id, page)

    @get(
        "/workspace-operations/{operation_id:str}",
        operation_id="getWorkspaceOperation",
        responses=error_responses(*_ERRORS),
    )
    async def get_workspace_operation(
        self,
        operation_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> WorkspaceOperationDetail:
        """One step with the last 64 KiB of its stdout and stderr and ``truncated``.

        Errors: 401; 403; 404.
        """
        query = GetWorkspaceOperation(principal=principal, operation_id=operation_id)
        return await _first_found(
            gateway,
            subjects.workspace_operation,
            query,
            WorkspaceOperationDetail,
            f"workspace operation {operation_id}",
        )

    @get(
        "/workspace-operations/{operation_id:str}/output",
        operation_id="getWorkspaceOperationOutput",
        media_type="text/plain; charset=utf-8",
        responses=error_responses(*_ERRORS),
    )
    async def get_workspace_operation_output(
        self,
        operation_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        stream: Annotated[
            Literal["stdout", "stderr"], QueryParameter(description="Which stream.")
        ] = "stdout",
        offset: Annotated[int, QueryParameter(ge=0, description="First byte.")] = 0,
        length: Annotated[
            int, QueryParameter(ge=1, le=MAX_OUTPUT_BYTES, description="Bytes, up to 256 KiB.")
        ] = MAX_OUTPUT_BYTES,
    ) -> Response[bytes]:
        """A byte range of one stream's full output as ``text/plain`` (``X-Total-Bytes`` gives
        the stream's size). Errors: 400 (``stream``, ``offset``, ``length``); 401; 403; 404."""
        query = GetWorkspaceOperationOutput(
            principal=principal,
            operation_id=operation_id,
            stream=stream,
            offset=offset,
            length=length,
        )
        output = await _first_found(
            gateway,
            subjects.workspace_operation_output,
            query,
            WorkspaceOperationOutput,
            f"workspace operation {operation_id}",
        )
        return Response(
            output.data,
            media_type="text/plain; charset=utf-8",
            headers={"X-Total-Bytes": str(output.total_bytes)},
        )

    @get(
        "/execution-workspaces/{workspace_id:str}/events",
        operation_id="listWorkspaceEvents",
        dependencies={"page": Provide(provide_page, sync_to_thread=False)},
        response_headers=TOTAL_COUNT,
        responses=error_responses(*_ERRORS),
    )
    async def list_workspace_events(
        self,
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[WorkspaceEventRow]]:
        """The workspace's audit trail, oldest first: ``[{eventId, type, source, aggregateId,
        aggregateVersion, occurredAt, actor, runId, reason, data}]``.

        Errors: 400 (``limit``); 401; 403; 404.
        """
        query = GetWorkspaceEvents(
            principal=principal, workspace_id=workspace_id, limit=page.limit, offset=page.offset
        )
        subject = subjects.workspace_events("realizer")
        return await fetch_page(gateway, subject, query, WorkspaceEventRow)

    @get(
        "/execution-workspaces/{workspace_id:str}/history",
        operation_id="getWorkspaceHistory",
        responses=error_responses(*_ERRORS),
    )
    async def get_workspace_history(
        self,
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        version: Annotated[
            int | None, QueryParameter(ge=1, description="After this event (1 = the first).")
        ] = None,
        at: Annotated[datetime | None, QueryParameter(description="ISO 8601 time.")] = None,
    ) -> WorkspaceHistory:
        """The workspace as it was after event ``version``, or at time ``at`` (give one).

        Errors: 400 (neither or both of ``version`` and ``at``); 401; 403; 404 (before its first
        event).
        """
        if (version is None) == (at is None):
            raise InvalidRequestError(
                "Give exactly one of 'version' (an event number) and 'at' (an ISO 8601 time).",
                fields=[{"field": "version", "message": "give version or at", "source": "query"}],
            )
        query = GetWorkspaceHistory(
            principal=principal, workspace_id=workspace_id, version=version, at=at
        )
        return await fetch(gateway, subjects.WORKSPACE_HISTORY, query, WorkspaceHistory)
