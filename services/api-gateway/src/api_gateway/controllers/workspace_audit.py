"""A workspace's record: its operations (with output), its events and its history.

Workspace operations and audit trails are stored by whichever service did the work
(ARCHITECTURE §1); :data:`OPERATION_SOURCES` lists the services asked: the workspace-realizer
(git and shell steps) and the runtime-supervisor (runtime actions, jobs, runtime provisioning).
Lists are merged by time; one operation is looked up in every source at once. The realizer owns
the workspace, so its refusal (404 for another company's) is the answer; a source that does not
answer (not running, too slow) leaves its rows out of a list, with ``X-Clipyard-Warning`` saying
so, and makes a single lookup that nobody else answers 503 (it may hold the operation).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any, Final, Literal, TypeVar

from litestar import Controller, Response, get
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter

from api_gateway.controllers.common import TOTAL_COUNT, Page, error_responses, provide_page
from api_gateway.controllers.events import parse_types
from api_gateway.controllers.realizer import InvalidRequestError, fetch
from api_gateway.controllers.runtime_facts import WARNING_HEADER, WARNING_HEADERS
from api_gateway.domain import NotFoundError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from api_gateway.http.security import access
from contracts import workspace_subjects as subjects
from contracts.base import Principal
from contracts.errors import ErrorCode
from contracts.event_types import KNOWN_EVENT_TYPES
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
from contracts.subjects import SERVICE_NAMES, ServiceToken
from contracts.workspace_views import Page as RowPage
from natsbus import error_reply
from servicekit.access import Action, Resource

__all__ = ["OPERATION_SOURCES", "WorkspaceAuditController"]

T = TypeVar("T")

log = logging.getLogger(__name__)

OPERATION_SOURCES: Final[tuple[ServiceToken, ...]] = ("realizer", "supervisor")
"""The services that record workspace operations and workspace events (the controller joins
with the heartbeat issue)."""
WORKSPACE_OWNER: Final[ServiceToken] = "realizer"
"""The source whose refusals are the answer (it owns the workspace and checks the company)."""

MAX_OUTPUT_BYTES: Final = 256 * 1024
_ERRORS = ("forbidden", "not_found", "timeout")
_ABSENT: Final = frozenset({"not_found", "service_unavailable"})
_SILENT: Final = frozenset({"service_unavailable", "timeout", "not_found"})
"""What a source other than the owner may answer without failing a list (its rows are left out)."""
_LIST_HEADERS: Final = [*TOTAL_COUNT, *WARNING_HEADERS]


async def _ask_all(
    gateway: Gateway, subject_of: Callable[[ServiceToken], str], message: Any, view: type[T]
) -> list[tuple[ServiceToken, T | BusReplyError]]:
    """Ask every source at once; each answer is its view or its error reply."""

    async def ask(source: ServiceToken) -> tuple[ServiceToken, T | BusReplyError]:
        try:
            answer = await fetch(
                gateway, subject_of(source), message, view, timeout=gateway.settings.query_timeout
            )
        except BusReplyError as exc:
            return source, exc
        return source, answer

    return list(await asyncio.gather(*(ask(source) for source in OPERATION_SOURCES)))


async def _first_found(
    gateway: Gateway, subject_of: Any, message: Any, view: type[T], what: str
) -> T:
    """Ask every source; an ``ok`` wins; 404 when every source says it has none.

    Raises:
        BusReplyError: No source has it and one failed otherwise (its error), or one did not
            answer (503: it may hold it, so "not found" would be a guess).
        NotFoundError: Every source answered that it has none.
    """
    answers = await _ask_all(gateway, subject_of, message, view)
    errors: list[tuple[ServiceToken, BusReplyError]] = []
    for source, answer in answers:
        if not isinstance(answer, BusReplyError):
            return answer
        errors.append((source, answer))
    for _, error in errors:
        if error.reply.code not in _ABSENT:
            raise error
    silent = [source for source, error in errors if error.reply.code != "not_found"]
    if silent:
        names = " and ".join(SERVICE_NAMES[source] for source in silent)
        verb = "is" if len(silent) == 1 else "are"
        raise BusReplyError(
            error_reply(
                ErrorCode.SERVICE_UNAVAILABLE,
                f"The {what} may belong to {names}, which {verb} not answering; check "
                "`clipyard status` and retry.",
                details={"services": [SERVICE_NAMES[source] for source in silent]},
            )
        )
    raise NotFoundError(f"There is no {what}.")


async def _merged_page(
    gateway: Gateway,
    subject_of: Callable[[ServiceToken], str],
    window: Any,
    row: type[T],
    page: Page,
    key: Callable[[T], datetime],
    what: str,
) -> Response[Sequence[T]]:
    """One page of the rows of every source, oldest first by ``key``.

    ``window`` asks each source for its first ``offset + limit`` rows (each source keeps its rows
    in ``key`` order), so the merged page is exact. The total is the sum of the sources' totals.
    """
    answers = await _ask_all(gateway, subject_of, window, RowPage[row])  # type: ignore[valid-type]
    rows: list[T] = []
    total = 0
    missing: list[str] = []
    for source, answer in answers:
        if isinstance(answer, BusReplyError):
            code = answer.reply.code
            if source == WORKSPACE_OWNER or code not in _SILENT:
                raise answer
            if code != "not_found":
                missing.append(f"{SERVICE_NAMES[source]} ({code})")
                log.warning("%s of %s left out: %s", what, SERVICE_NAMES[source], answer)
            continue
        rows.extend(answer.items)
        total += answer.total
    rows.sort(key=key)
    headers = {"X-Total-Count": str(total)}
    if missing:
        headers[WARNING_HEADER] = (
            f"{' and '.join(missing)} did not answer: its {what} are not listed."
        )
    return Response(rows[page.offset : page.offset + page.limit], headers=headers)


class WorkspaceAuditController(Controller):
    """What happened to a workspace: host steps with their output, events, past states."""

    path = "/api"
    tags = ["execution-workspaces"]

    @get(
        "/execution-workspaces/{workspace_id:str}/workspace-operations",
        operation_id="listWorkspaceOperations",
        opt=access(Resource.EXECUTION_WORKSPACE, Action.READ),
        dependencies={"page": Provide(provide_page, sync_to_thread=False)},
        response_headers=_LIST_HEADERS,
        responses=error_responses(*_ERRORS),
    )
    async def list_workspace_operations(
        self,
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
    ) -> Response[Sequence[WorkspaceOperation]]:
        """The git and shell steps (realizer) and runtime actions and jobs (supervisor) run
        against a workspace, merged oldest first by ``startedAt``: ``{id, phase, command, cwd,
        status, exitCode, startedAt, finishedAt, runId, source}`` (no output on rows). A source
        that does not answer is left out and named in ``X-Clipyard-Warning``.

        Errors: 400 (``limit``); 401; 403; 404.
        """
        window = ListWorkspaceOperations(
            principal=principal, workspace_id=workspace_id, limit=page.offset + page.limit
        )
        return await _merged_page(
            gateway,
            subjects.workspace_operations,
            window,
            WorkspaceOperation,
            page,
            lambda row: row.started_at,
            "workspace operations",
        )

    @get(
        "/workspace-operations/{operation_id:str}",
        operation_id="getWorkspaceOperation",
        opt=access(Resource.EXECUTION_WORKSPACE, Action.READ),
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
        opt=access(Resource.EXECUTION_WORKSPACE, Action.READ),
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
        opt=access(Resource.EXECUTION_WORKSPACE, Action.READ),
        dependencies={"page": Provide(provide_page, sync_to_thread=False)},
        response_headers=_LIST_HEADERS,
        responses=error_responses(*_ERRORS),
    )
    async def list_workspace_events(
        self,
        workspace_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
        types: Annotated[
            str | None,
            QueryParameter(description="Comma list of types, types without version, aggregates."),
        ] = None,
    ) -> Response[Sequence[WorkspaceEventRow]]:
        """The workspace's audit trail, oldest first by ``occurredAt``: its own events (realizer)
        and those of its runtime services and jobs (supervisor), ``[{eventId, type, label,
        source, aggregateId, aggregateVersion, occurredAt, actor, runId, reason, data}]``:
        ``type`` is public (``workspace.provisioned.v1`` for one never published), ``label`` for
        people. ``?types=`` filters as the event stream does. A source that does not answer is
        left out and named in ``X-Clipyard-Warning``.

        Errors: 400 (``limit``, unknown ``types``); 401; 403; 404.
        """
        wanted = parse_types(types, KNOWN_EVENT_TYPES)
        window = GetWorkspaceEvents(
            principal=principal,
            workspace_id=workspace_id,
            limit=page.offset + page.limit,
            types=list(wanted.values) if wanted is not None else None,
        )
        return await _merged_page(
            gateway,
            subjects.workspace_events,
            window,
            WorkspaceEventRow,
            page,
            lambda row: row.occurred_at,
            "workspace events",
        )

    @get(
        "/execution-workspaces/{workspace_id:str}/history",
        operation_id="getWorkspaceHistory",
        opt=access(Resource.EXECUTION_WORKSPACE, Action.READ),
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
