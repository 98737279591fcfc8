"""Runtime control over HTTP: the action, the body, the acting run, and the bus round trip.

``POST .../runtime-services/{action}`` (and its alias ``.../runtime-commands/{action}``) on an
execution workspace or a project workspace becomes one :class:`ControlRuntime` command to the
runtime-supervisor of the workspace's node (reference §4.2). The gateway checks the action (an
unknown one is 404 before anything is sent: case 64), the body's shape and the ``X-Run-Id``
header; the supervisor checks the company, the workspace's runtime config, the job/service kind
(422) and, for agent actors, the runtime-control lease (409 ``workspace_runtime_lease_conflict``).
"""

from __future__ import annotations

import logging
import uuid
from typing import Annotated, Any, Final

import msgspec
from litestar import Response
from litestar.connection import ASGIConnection
from litestar.di import NamedDependency
from litestar.handlers.base import BaseRouteHandler
from litestar.params import HeaderParameter

from api_gateway.controllers.placement import node_unanswered
from api_gateway.controllers.realizer import (
    InvalidRequestError,
    accepted,
    fetch,
    node_of,
    request_result,
)
from api_gateway.controllers.runtime_facts import warned
from api_gateway.domain import ForbiddenError, NotFoundError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from contracts import workspace_subjects as subjects
from contracts.base import Accepted, Actor, Principal, Struct
from contracts.execution_views import ExecutionWorkspace, RuntimeServiceBrief, WorkspaceOperation
from contracts.http import StrictBody
from contracts.runtime_commands import (
    ControlRuntime,
    RealizerFacts,
    RuntimeAction,
    RuntimeControlResult,
)
from contracts.runtime_subjects import runtime_control
from contracts.workspace_commands import GetProjectWorkspace
from contracts.workspace_views import ProjectWorkspace
from servicekit.access import Access, Resource

__all__ = [
    "RUNTIME_ACTIONS",
    "ProjectRuntimeControlAnswer",
    "RuntimeControlAnswer",
    "RuntimeControlBody",
    "acting_principal",
    "command_of",
    "control_project_workspace",
    "known_action",
]

log = logging.getLogger(__name__)

RUNTIME_ACTIONS: Final[tuple[RuntimeAction, ...]] = ("start", "stop", "restart", "run")

CommandId = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class RuntimeControlBody(StrictBody, frozen=True, kw_only=True):
    """``POST .../runtime-services/{action}``: what to act on; nothing named is every service of
    the workspace (``run`` needs a job: ``workspaceCommandId``). An empty body is ``{}``."""

    workspace_command_id: CommandId | None = None
    """A configured command: ``service:web``, ``job:migrate``."""
    runtime_service_id: CommandId | None = None
    """A runtime service row (``runtimeServices[].id``)."""
    service_index: Annotated[int, msgspec.Meta(ge=0)] | None = None
    """A service by its index among the configured services (0 is the first)."""


class RuntimeControlAnswer(Struct, frozen=True, kw_only=True):
    """The answer of an execution workspace's runtime action: the workspace read again (as
    ``GET /api/execution-workspaces/{id}`` answers it) and the operation recorded for it."""

    workspace: ExecutionWorkspace
    operation: WorkspaceOperation


class ProjectRuntimeControlAnswer(Struct, frozen=True, kw_only=True):
    """The answer of a project workspace's runtime action: the project workspace read again,
    the operation recorded for it, and its runtime services after it."""

    workspace: ProjectWorkspace
    operation: WorkspaceOperation
    runtime_services: list[RuntimeServiceBrief] = msgspec.field(default_factory=list)


def known_action(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Guard: ``{action}`` is one of start, stop, restart, run (any case); else 404 before the
    body is read or anything is sent (reference case 64)."""
    raw = str(connection.path_params.get("action", ""))
    if raw.lower() not in RUNTIME_ACTIONS:
        raise NotFoundError(
            f"There is no runtime action {raw!r}; use one of {', '.join(RUNTIME_ACTIONS)}.",
            action=raw,
            actions=list(RUNTIME_ACTIONS),
        )


def _action(raw: str) -> RuntimeAction:
    action = raw.lower()
    if action not in RUNTIME_ACTIONS:  # the guard answered already; kept for direct calls
        raise NotFoundError(f"There is no runtime action {raw!r}.", action=raw)
    return action


def _run_id(value: str, header: str) -> str:
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise InvalidRequestError(
            f"The {header} header must be a run id (a UUID).",
            fields=[{"field": header, "message": "not a UUID", "source": "header"}],
        ) from None


def acting_principal(
    principal: NamedDependency[Principal],
    run_id: Annotated[
        str | None,
        HeaderParameter(
            name="X-Run-Id",
            required=False,
            description="The run this action is made for (agents: the run that holds the "
            "workspace; it becomes the owner of the runtime-control lease).",
        ),
    ] = None,
    paperclip_run_id: Annotated[
        str | None,
        HeaderParameter(
            name="X-Paperclip-Run-Id", required=False, description="Alias of X-Run-Id."
        ),
    ] = None,
) -> Principal:
    """The principal with the run named by ``X-Run-Id`` (alias ``X-Paperclip-Run-Id``).

    Raises:
        InvalidRequestError: A header that is not a UUID, or the two headers disagree.
        ForbiddenError: The key is a run token of another run.
    """
    given = {
        header: _run_id(value, header)
        for header, value in (("X-Run-Id", run_id), ("X-Paperclip-Run-Id", paperclip_run_id))
        if value is not None
    }
    if not given:
        return principal
    if len(set(given.values())) > 1:
        raise InvalidRequestError(
            "X-Run-Id and X-Paperclip-Run-Id name different runs; send one of them.",
            fields=[{"field": "X-Run-Id", "message": "differs from the alias", "source": "header"}],
        )
    (run,) = set(given.values())
    if principal.run_id is not None and principal.run_id != run:
        raise ForbiddenError(
            "This key acts for another run; X-Run-Id must match it, or be left out.",
            runId=run,
        )
    return msgspec.structs.replace(principal, run_id=run)


def command_of(
    principal: Principal,
    action: str,
    body: RuntimeControlBody | None,
    facts: RealizerFacts,
    **target: str,
) -> ControlRuntime:
    body = body or RuntimeControlBody()
    return ControlRuntime(
        principal=principal,
        action=_action(action),
        workspace_command_id=body.workspace_command_id,
        runtime_service_id=body.runtime_service_id,
        service_index=body.service_index,
        realizer_facts=facts,
        **target,
    )


def facts_reader(principal: Principal, company_id: str | None) -> Principal:
    """Who reads the project workspace whose configuration goes to the supervisor as facts.

    The caller, unless its reads of project workspaces are redacted (an agent key or run token:
    no ``env`` values, no host paths, ARCHITECTURE §5.1): the supervisor compares the facts with
    its own copies, which are whole, so a redacted read would never match. Then the gateway reads
    them as Clipyard itself, for the same company; they go to the supervisor only, never back to
    the caller, who was checked by its own read first.
    """
    if not Access.of(principal).redacted(Resource.PROJECT_WORKSPACE):
        return principal
    return Principal(company_id=company_id, actor=Actor(type="system", id="api-gateway"))


async def control_project_workspace(
    gateway: Gateway,
    principal: Principal,
    project_id: str,
    workspace_id: str,
    action: str,
    body: RuntimeControlBody | None,
) -> Response[Any]:
    """Read the project workspace (404 for another project's or company's), send the action to
    the supervisor, and answer ``{workspace, operation, runtimeServices}`` (202 for long work).

    Raises:
        BusReplyError: The realizer or the supervisor refused (status, code and details kept).
    """
    query = GetProjectWorkspace(
        principal=principal, project_id=project_id, workspace_id=workspace_id
    )
    workspace = await fetch(gateway, subjects.PROJECT_WORKSPACE_GET, query, ProjectWorkspace)
    reader = facts_reader(principal, workspace.company_id)
    whole = workspace
    if reader is not principal:
        whole = await fetch(
            gateway,
            subjects.PROJECT_WORKSPACE_GET,
            msgspec.structs.replace(query, principal=reader),
            ProjectWorkspace,
        )
    facts = RealizerFacts(project_runtime_config=whole.runtime_config)
    command = command_of(principal, action, body, facts, project_workspace_id=workspace_id)
    node = whole.node_id or node_of(gateway)
    subject = runtime_control(node)
    try:
        result = await request_result(gateway, subject, command, RuntimeControlResult)
    except BusReplyError as exc:
        raise node_unanswered(exc, subject, node) from None
    if isinstance(result, Accepted):
        return accepted(result)
    warning = None
    try:
        workspace = await fetch(gateway, subjects.PROJECT_WORKSPACE_GET, query, ProjectWorkspace)
    except BusReplyError as exc:
        log.warning("re-reading project workspace %s after %s: %s", workspace_id, action, exc)
        warning = f"The project workspace could not be read again ({exc}): it is shown as before."
    answer = ProjectRuntimeControlAnswer(
        workspace=workspace, operation=result.operation, runtime_services=result.runtime_services
    )
    return warned(answer, warning)
