"""Runtime services and jobs: start, stop, restart, run, and a service's log.

``/api/execution-workspaces/{id}/runtime-services/{action}`` (alias ``runtime-commands``), the
project-workspace equivalents under ``/api/projects/{projectId}/workspaces/{workspaceId}``, and
``/api/execution-workspaces/{id}/runtime-services/{serviceId}/logs``. The runtime-supervisor owns
all of it; see :mod:`api_gateway.controllers.runtime_control` for what the gateway checks first.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from litestar import Controller, Response, get, post
from litestar.datastructures import ResponseHeader
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody, QueryParameter

from api_gateway.controllers.common import error_responses
from api_gateway.controllers.execution_control import control_execution_workspace
from api_gateway.controllers.realizer import ACCEPTED, InvalidRequestError, fetch
from api_gateway.controllers.runtime_control import (
    ProjectRuntimeControlAnswer,
    RuntimeControlAnswer,
    RuntimeControlBody,
    acting_principal,
    control_project_workspace,
    known_action,
)
from api_gateway.controllers.runtime_facts import WARNING_HEADERS
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access
from contracts.base import Principal
from contracts.runtime_commands import GetRuntimeServiceLog, RuntimeServiceLog
from contracts.runtime_subjects import RUNTIME_LOG
from servicekit.access import Action, Resource

__all__ = ["MAX_LOG_BYTES", "MAX_TAIL_LINES", "RuntimeServiceController"]

MAX_LOG_BYTES: Final = 256 * 1024
MAX_TAIL_LINES: Final = 100_000

_CONTROL_ERRORS: Final = (
    "forbidden",
    "not_found",
    "unprocessable",
    "workspace_runtime_lease_conflict",
    "workspace_runtime_port_allocation_exhausted",
    "port_conflict",
    "state_conflict",
    "runtime_service_start_failed",
    "runtime_provisioning_failed",
    "service_unavailable",
    "timeout",
)
_CONTROL_RESPONSES: Final = {**error_responses(*_CONTROL_ERRORS), **ACCEPTED}
_LOG_HEADERS: Final = [
    ResponseHeader(
        name="X-Total-Bytes",
        description="The log file's size in bytes.",
        documentation_only=True,
    ),
    ResponseHeader(
        name="X-Log-Offset",
        description="The byte offset of the first byte answered (the next read starts at "
        "this plus the body's length).",
        documentation_only=True,
    ),
]
_EXEC: Final = "/execution-workspaces/{workspace_id:str}"
_PROJECT: Final = "/projects/{project_id:str}/workspaces/{workspace_id:str}"
_CONTROL_DOC: Final = """

Body (strict; may be empty): ``workspaceCommandId`` (a configured command such as
``service:web`` or ``job:migrate``), ``runtimeServiceId`` (a row of ``runtimeServices``) or
``serviceIndex`` (0..); none of them: every service (``run`` needs a job). Board keys act
freely; agent keys and run tokens act only while one of their runs holds the workspace, under
its runtime-control lease (``X-Run-Id`` names the run). 202 with an operation past the request
deadline (110 s).

Errors: 400 (the body); 401; 403; 404 (an unknown action, named, before anything is sent; no
such workspace or command); 409 ``workspace_runtime_lease_conflict`` (details name the owner),
``workspace_runtime_port_allocation_exhausted``, ``port_conflict``; 422 ``unprocessable`` (a job
with start/stop/restart, a service with run); 503; 504."""


class RuntimeServiceController(Controller):
    """Runtime services (long-running processes with ports) and jobs (one-off commands) of a
    workspace, run by the runtime-supervisor."""

    path = "/api"
    tags = ["runtime-services"]
    dependencies = {"acting": Provide(acting_principal, sync_to_thread=False)}

    @post(
        f"{_EXEC}/runtime-services/{{action:str}}",
        operation_id="controlRuntimeServices",
        opt=access(Resource.RUNTIME_SERVICE, Action.CONTROL),
        guards=[known_action],
        status_code=200,
        responses=_CONTROL_RESPONSES,
        response_headers=WARNING_HEADERS,
        description="Start, stop or restart an execution workspace's runtime services, or run "
        "one of its jobs (``action``: start, stop, restart, run; any case); answers "
        "``{workspace, operation}`` with the workspace read again." + _CONTROL_DOC,
    )
    async def control_runtime_services(
        self,
        workspace_id: FromPath[str],
        action: FromPath[str],
        gateway: NamedDependency[Gateway],
        acting: NamedDependency[Principal],
        data: JSONBody[RuntimeControlBody | None] = None,
    ) -> Response[RuntimeControlAnswer]:
        """Act on an execution workspace's runtime services or jobs."""
        return await control_execution_workspace(gateway, acting, workspace_id, action, data)

    @post(
        f"{_EXEC}/runtime-commands/{{action:str}}",
        operation_id="controlRuntimeCommands",
        opt=access(Resource.RUNTIME_SERVICE, Action.CONTROL),
        guards=[known_action],
        status_code=200,
        responses=_CONTROL_RESPONSES,
        response_headers=WARNING_HEADERS,
        description="The same as ``.../runtime-services/{action}`` (the reference's alias): "
        "start, stop or restart services, or run a job, of an execution workspace; answers "
        "``{workspace, operation}``." + _CONTROL_DOC,
    )
    async def control_runtime_commands(
        self,
        workspace_id: FromPath[str],
        action: FromPath[str],
        gateway: NamedDependency[Gateway],
        acting: NamedDependency[Principal],
        data: JSONBody[RuntimeControlBody | None] = None,
    ) -> Response[RuntimeControlAnswer]:
        """Act on an execution workspace's runtime services or jobs (alias)."""
        return await control_execution_workspace(gateway, acting, workspace_id, action, data)

    @post(
        f"{_PROJECT}/runtime-services/{{action:str}}",
        operation_id="controlProjectRuntimeServices",
        opt=access(Resource.RUNTIME_SERVICE, Action.CONTROL),
        guards=[known_action],
        status_code=200,
        responses=_CONTROL_RESPONSES,
        response_headers=WARNING_HEADERS,
        description="Start, stop or restart a project workspace's own (project-scoped) runtime "
        "services, or run one of its jobs; answers ``{workspace, operation, runtimeServices}`` "
        "with the project workspace read again." + _CONTROL_DOC,
    )
    async def control_project_runtime_services(
        self,
        project_id: FromPath[str],
        workspace_id: FromPath[str],
        action: FromPath[str],
        gateway: NamedDependency[Gateway],
        acting: NamedDependency[Principal],
        data: JSONBody[RuntimeControlBody | None] = None,
    ) -> Response[ProjectRuntimeControlAnswer]:
        """Act on a project workspace's runtime services or jobs."""
        return await control_project_workspace(
            gateway, acting, project_id, workspace_id, action, data
        )

    @post(
        f"{_PROJECT}/runtime-commands/{{action:str}}",
        operation_id="controlProjectRuntimeCommands",
        opt=access(Resource.RUNTIME_SERVICE, Action.CONTROL),
        guards=[known_action],
        status_code=200,
        responses=_CONTROL_RESPONSES,
        response_headers=WARNING_HEADERS,
        description="The same as the project workspace's ``.../runtime-services/{action}`` "
        "(the reference's alias); answers ``{workspace, operation, runtimeServices}``."
        + _CONTROL_DOC,
    )
    async def control_project_runtime_commands(
        self,
        project_id: FromPath[str],
        workspace_id: FromPath[str],
        action: FromPath[str],
        gateway: NamedDependency[Gateway],
        acting: NamedDependency[Principal],
        data: JSONBody[RuntimeControlBody | None] = None,
    ) -> Response[ProjectRuntimeControlAnswer]:
        """Act on a project workspace's runtime services or jobs (alias)."""
        return await control_project_workspace(
            gateway, acting, project_id, workspace_id, action, data
        )

    @get(
        f"{_EXEC}/runtime-services/{{service_id:str}}/logs",
        operation_id="getRuntimeServiceLog",
        opt=access(Resource.RUNTIME_SERVICE, Action.READ),
        media_type="text/plain; charset=utf-8",
        response_headers=_LOG_HEADERS,
        responses=error_responses("forbidden", "not_found", "service_unavailable", "timeout"),
    )
    async def get_runtime_service_log(
        self,
        workspace_id: FromPath[str],
        service_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        tail: Annotated[
            int | None,
            QueryParameter(ge=1, le=MAX_TAIL_LINES, description="The last N lines."),
        ] = None,
        offset: Annotated[
            int | None, QueryParameter(ge=0, description="First byte (with ``length``).")
        ] = None,
        length: Annotated[
            int | None,
            QueryParameter(ge=1, le=MAX_LOG_BYTES, description="Bytes, up to 256 KiB."),
        ] = None,
    ) -> Response[Any]:
        """A runtime service's log (its command's stdout and stderr) as ``text/plain``: the last
        ``tail`` lines, or ``length`` bytes from ``offset`` (up to 256 KiB; ``offset`` alone
        reads 256 KiB, ``length`` alone reads from the start); neither: the last 64 KiB.
        ``X-Total-Bytes`` gives the file's size, ``X-Log-Offset`` where the answer starts.

        Errors: 400 (``tail``, ``offset``, ``length``; ``tail`` with a byte range); 401; 403;
        404 (no such workspace or service); 503; 504.
        """
        ranged = offset is not None or length is not None
        if tail is not None and ranged:
            raise InvalidRequestError(
                "Give 'tail' (lines) or 'offset'/'length' (bytes), not both.",
                fields=[{"field": "tail", "message": "not with offset/length", "source": "query"}],
            )
        query = GetRuntimeServiceLog(
            principal=principal,
            workspace_id=workspace_id,
            service_id=service_id,
            tail=tail,
            offset=(offset or 0) if ranged else None,
            length=(length or MAX_LOG_BYTES) if ranged else None,
        )
        log = await fetch(
            gateway, RUNTIME_LOG, query, RuntimeServiceLog, timeout=gateway.settings.query_timeout
        )
        return Response(
            log.text,
            media_type="text/plain; charset=utf-8",
            headers={"X-Total-Bytes": str(log.size), "X-Log-Offset": str(log.offset)},
        )
