"""Heartbeat runs: ``/api/runs/{runId}`` (+ ``/cancel``, ``/log``), ``/api/companies/{companyId}/
runs`` and ``/api/companies/{companyId}/tools/runtime-health``.

Runs are the heartbeat controller's; a run's log and the slots' health are the runtime
supervisor's. The log is read only after the controller answered the run for this principal
(another company's: 404; an agent's other run: 403), so the supervisor is never asked for a run
the caller may not see.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Final

from litestar import Controller, Response, get, post
from litestar.datastructures import ResponseHeader
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter

from api_gateway.controllers.common import TOTAL_COUNT, Page, error_responses, provide_page
from api_gateway.controllers.realizer import (
    InvalidRequestError,
    fetch,
    fetch_page,
    parse_choices,
)
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access, check_company
from contracts import heartbeat_subjects as subjects
from contracts.agents import CancelRun, GetRun, ListRuns, RunFilters, RunView
from contracts.base import Principal
from contracts.slots import GetRunLog, GetSlotHealth, RunLogSlice, SlotHealth
from servicekit.access import Action, Resource

__all__ = ["MAX_RUN_LOG_BYTES", "RUN_STATUSES", "RunController"]

MAX_RUN_LOG_BYTES: Final = 256 * 1024
RUN_STATUSES: Final = ("queued", "running", "succeeded", "failed", "cancelled", "timed_out")
_ERRORS: Final = ("forbidden", "not_found", "service_unavailable", "timeout")
_LOG_HEADERS: Final = [
    ResponseHeader(
        name="X-Total-Bytes",
        description="The run log's size in bytes (it grows while the run runs).",
        documentation_only=True,
    ),
    ResponseHeader(
        name="X-Log-Offset",
        description="The byte offset of the first byte answered.",
        documentation_only=True,
    ),
    ResponseHeader(
        name="X-Log-Length",
        description="How many bytes were answered (the next read starts at offset + length).",
        documentation_only=True,
    ),
]


class RunController(Controller):
    """Heartbeat runs: their status, stage, result and log; adapter slots' health."""

    path = "/api"
    tags = ["runs"]

    @get(
        "/runs/{run_id:str}",
        operation_id="getRun",
        opt=access(Resource.RUN, Action.READ),
        responses=error_responses(*_ERRORS),
    )
    async def get_run(
        self,
        run_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> RunView:
        """Read a run: status (``queued``, ``running``, ``succeeded``, ``failed``,
        ``cancelled``, ``timed_out``), stage (``wakeup`` … ``cleanup``), exit code, error code,
        output excerpts, usage and result.

        Errors: 401; 403 (an agent's key on another agent's run; a run token on any run but
        its own); 404; 503; 504.
        """
        return await fetch(
            gateway, subjects.RUN_GET, GetRun(principal=principal, run_id=run_id), RunView
        )

    @post(
        "/runs/{run_id:str}/cancel",
        operation_id="cancelRun",
        opt=access(Resource.RUN, Action.CONTROL),
        status_code=202,
        responses=error_responses(*_ERRORS, "run_finished", "state_conflict"),
    )
    async def cancel_run(
        self,
        run_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> RunView:
        """Cancel a run → 202 with the run: a queued run ends ``cancelled`` at once; a running
        one has its adapter's process group killed and goes through cleanup (poll the run).

        Errors: 401; 403 (an agent's key on another agent's run; a run token on any run but
        its own); 404; 409 (the run has finished); 503; 504.
        """
        command = CancelRun(principal=principal, run_id=run_id)
        return await fetch(gateway, subjects.RUN_CANCEL, command, RunView)

    @get(
        "/runs/{run_id:str}/log",
        operation_id="getRunLog",
        opt=access(Resource.RUN, Action.READ),
        media_type="text/plain; charset=utf-8",
        response_headers=_LOG_HEADERS,
        responses=error_responses(*_ERRORS),
    )
    async def get_run_log(
        self,
        run_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        offset: Annotated[int, QueryParameter(ge=0, description="First byte.")] = 0,
        length: Annotated[
            int,
            QueryParameter(ge=1, le=MAX_RUN_LOG_BYTES, description="Bytes, up to 256 KiB."),
        ] = MAX_RUN_LOG_BYTES,
    ) -> Response[str]:
        """A run's log (the adapter's stdout and stderr as written, interleaved) as
        ``text/plain``: ``length`` bytes (up to 256 KiB, the default) from ``offset`` (default
        0). ``X-Total-Bytes`` gives the log's size, ``X-Log-Offset`` and ``X-Log-Length`` the
        range answered.

        Errors: 400 (``offset`` below 0, ``length`` outside 1..262144); 401; 403; 404 (no such
        run, or a run that never had an adapter slot); 503; 504.
        """
        query = GetRun(principal=principal, run_id=run_id)
        await fetch(gateway, subjects.RUN_GET, query, RunView)
        log_query = GetRunLog(principal=principal, run_id=run_id, offset=offset, length=length)
        log = await fetch(
            gateway,
            subjects.SLOT_RUN_LOG,
            log_query,
            RunLogSlice,
            timeout=gateway.settings.query_timeout,
        )
        return Response(
            log.text,
            media_type="text/plain; charset=utf-8",
            headers={
                "X-Total-Bytes": str(log.size),
                "X-Log-Offset": str(log.offset),
                "X-Log-Length": str(log.length),
            },
        )

    @get(
        "/companies/{company_id:str}/runs",
        operation_id="listRuns",
        opt=access(Resource.RUN, Action.READ),
        dependencies={"page": Provide(provide_page, sync_to_thread=False)},
        response_headers=TOTAL_COUNT,
        responses=error_responses(*_ERRORS),
    )
    async def list_runs(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        page: NamedDependency[Page],
        agent_id: Annotated[str | None, QueryParameter(name="agentId")] = None,
        issue_id: Annotated[str | None, QueryParameter(name="issueId")] = None,
        status: Annotated[str | None, QueryParameter(description="One run status.")] = None,
    ) -> Response[Sequence[RunView]]:
        """List a company's runs, newest first (rows without excerpts, usage and result);
        filters ``agentId``, ``issueId``, ``status``; ``X-Total-Count`` gives the total. An
        agent key lists its agent's runs only, a run token its own run only.

        Errors: 400 (an unknown ``status``, named; ``limit`` outside 1..200); 401; 403; 404
        (another company); 503; 504.
        """
        check_company(principal, company_id)
        statuses = parse_choices(status, RUN_STATUSES, "status")
        if len(statuses) > 1:
            raise InvalidRequestError(
                "Filter runs by one status at a time.",
                fields=[{"field": "status", "message": "one status", "source": "query"}],
            )
        filters = RunFilters(
            agent_id=agent_id,
            issue_id=issue_id,
            status=statuses[0] if statuses else None,  # type: ignore[arg-type]
        )
        query = ListRuns(principal=principal, filters=filters, limit=page.limit, offset=page.offset)
        return await fetch_page(gateway, subjects.RUN_LIST, query, RunView)

    @get(
        "/companies/{company_id:str}/tools/runtime-health",
        operation_id="getRuntimeHealth",
        opt=access(Resource.ADAPTER_SLOTS, Action.READ),
        responses=error_responses(*_ERRORS),
    )
    async def runtime_health(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
    ) -> list[SlotHealth]:
        """Adapter slots' health, per type: ``[{type: local_stdio|remote_http, capacity (null:
        unbounded), inUse, healthy, sandbox, detail}]`` (from the runtime supervisor). Board
        keys and sessions only.

        Errors: 401; 403 (the admin key, an agent key or a run token); 404 (another company);
        503; 504.
        """
        check_company(principal, company_id)
        query = GetSlotHealth(principal=principal)
        return await fetch(
            gateway,
            subjects.SLOT_HEALTH,
            query,
            list[SlotHealth],
            timeout=gateway.settings.query_timeout,
        )
