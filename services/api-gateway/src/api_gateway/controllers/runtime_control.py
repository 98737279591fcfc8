"""Runtime control over HTTP: the action, the body, the acting run, and the bus round trip.

``POST .../runtime-services/{action}`` (and its alias ``.../runtime-commands/{action}``) on an
execution workspace or a project workspace becomes one :class:`ControlRuntime` command to the
runtime-supervisor of the workspace's node (reference §4.2). The gateway checks the action (an
unknown one is 404 before anything is sent: case 64), the body's shape and the ``X-Run-Id``
header; the supervisor checks the company, the workspace's runtime config, the job/service kind
(422) and, for agent actors, the runtime-control lease (409 ``workspace_runtime_lease_conflict``).
"""

from __future__ import annotations

import asyncio
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
from api_gateway.controllers.runtime_facts import warned, workspace_detail
from api_gateway.domain import ForbiddenError, NotFoundError
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from contracts import workspace_subjects as subjects
from contracts.base import Accepted, Actor, Principal, Struct
from contracts.execution_commands import GetExecutionWorkspace
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
    "control_execution_workspace",
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


def _command(
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


async def _execution_facts(
    gateway: Gateway, principal: Principal, workspace: ExecutionWorkspace
) -> RealizerFacts:
    """What the realizer says of the workspace (and of the project workspace it inherits
    services from): the supervisor acts once its copies say the same, so a configuration saved
    a moment ago is the one used."""
    facts = RealizerFacts(
        workspace_config=workspace.config, lifecycle_generation=workspace.lifecycle_generation
    )
    if workspace.project_workspace_id is None:
        return facts
    query = GetProjectWorkspace(
        principal=facts_reader(principal, workspace.company_id),
        project_id=workspace.project_id,
        workspace_id=workspace.project_workspace_id,
    )
    try:
        linked = await fetch(gateway, subjects.PROJECT_WORKSPACE_GET, query, ProjectWorkspace)
    except BusReplyError as exc:  # not compared: the action goes on with what the copies say
        log.info("project workspace %s not read: %s", workspace.project_workspace_id, exc)
        return facts
    return msgspec.structs.replace(facts, project_runtime_config=linked.runtime_config)


async def control_execution_workspace(
    gateway: Gateway,
    principal: Principal,
    workspace_id: str,
    action: str,
    body: RuntimeControlBody | None,
) -> Response[Any]:
    """Read the workspace (404 for another company's), send the action to its node's
    supervisor, and answer ``{workspace, operation}`` (202 with the operation for long work).

    Raises:
        BusReplyError: The realizer or the supervisor refused (status, code and details kept).
    """
    # The record (its node, config and company) without git; the detail, git's delivery state
    # included, is read while the supervisor acts: a runtime action changes none of it.
    query = GetExecutionWorkspace(principal=principal, workspace_id=workspace_id, delivery=False)
    workspace = await fetch(gateway, subjects.WORKSPACE_GET, query, ExecutionWorkspace)
    facts = await _execution_facts(gateway, principal, workspace)
    command = _command(principal, action, body, facts, workspace_id=workspace_id)
    subject = runtime_control(workspace.node_id)
    detail = asyncio.ensure_future(
        fetch(
            gateway,
            subjects.WORKSPACE_GET,
            msgspec.structs.replace(query, delivery=True),
            ExecutionWorkspace,
        )
    )
    detail.add_done_callback(lambda done: done.cancelled() or done.exception())  # seen if dropped
    try:
        result = await request_result(gateway, subject, command, RuntimeControlResult)
    except BusReplyError as exc:
        detail.cancel()
        raise node_unanswered(exc, subject, workspace.node_id) from None
    except BaseException:
        detail.cancel()
        raise
    if isinstance(result, Accepted):
        detail.cancel()
        return accepted(result)
    try:
        again = await detail
    except BusReplyError as exc:  # the action happened: answer it with what is known
        log.warning("reading workspace %s alongside its %s: %s", workspace_id, action, exc)
        return warned(
            RuntimeControlAnswer(
                workspace=msgspec.structs.replace(
                    workspace, runtime_services=result.runtime_services
                ),
                operation=result.operation,
            ),
            f"The workspace could not be read whole alongside the {action}: runtimeServices are "
            f"those the {action} answered with; its delivery state and runtimeProvisioning are "
            "not shown.",
        )
    if result.runtime_provisioning is None:  # a supervisor older than the field
        return await _read_again(gateway, principal, workspace_id, action, result)
    after = msgspec.structs.replace(
        again,
        runtime_services=result.runtime_services,
        runtime_provisioning=result.runtime_provisioning,
    )
    return warned(RuntimeControlAnswer(workspace=after, operation=result.operation), None)


async def _read_again(
    gateway: Gateway,
    principal: Principal,
    workspace_id: str,
    action: str,
    result: RuntimeControlResult,
) -> Response[Any]:
    """The answer through a read of the detail after the action (the supervisor's facts
    included), or with the rows the action answered with when the supervisor is gone since."""
    again, warning = await workspace_detail(gateway, principal, workspace_id, probe_health=False)
    if warning is not None:
        again = msgspec.structs.replace(again, runtime_services=result.runtime_services)
        warning = (
            f"The workspace could not be read whole after the {action}: runtimeServices are "
            f"those the {action} answered with; runtimeProvisioning is not shown."
        )
    return warned(RuntimeControlAnswer(workspace=again, operation=result.operation), warning)


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
    command = _command(principal, action, body, facts, project_workspace_id=workspace_id)
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
