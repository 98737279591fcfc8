"""Runtime control of an execution workspace: its record read without git, the action sent to the
supervisor of its node while its detail (git's delivery state included) is read, and the answer
composed of that detail and the facts the supervisor answered the action with.

A runtime action changes nothing the realizer holds, so reading the detail alongside the action
answers what a read after it would, in the time of the slower of the two rather than their sum.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec
from litestar import Response

from api_gateway.controllers.placement import node_unanswered
from api_gateway.controllers.realizer import accepted, fetch, request_result
from api_gateway.controllers.runtime_control import (
    RuntimeControlAnswer,
    RuntimeControlBody,
    command_of,
    facts_reader,
)
from api_gateway.controllers.runtime_facts import runtime_state, warned
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from contracts import workspace_subjects as subjects
from contracts.base import Accepted, Principal
from contracts.execution_commands import GetExecutionWorkspace
from contracts.execution_views import ExecutionWorkspace
from contracts.runtime_commands import RealizerFacts, RuntimeControlResult
from contracts.runtime_subjects import runtime_control
from contracts.workspace_commands import GetProjectWorkspace
from contracts.workspace_views import ProjectWorkspace

__all__ = ["control_execution_workspace"]

log = logging.getLogger(__name__)


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
    command = command_of(principal, action, body, facts, workspace_id=workspace_id)
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
    except BaseException as exc:
        detail.cancel()
        if isinstance(exc, BusReplyError):
            raise node_unanswered(exc, subject, workspace.node_id) from None
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
                    workspace,
                    runtime_services=result.runtime_services,
                    runtime_provisioning=result.runtime_provisioning
                    or workspace.runtime_provisioning,
                ),
                operation=result.operation,
            ),
            f"The workspace could not be read whole alongside the {action}: its runtime facts "
            f"are those the {action} answered with, and its delivery state is not shown.",
        )
    if result.runtime_provisioning is None:  # a supervisor older than the field
        return await _with_state(gateway, principal, again, action, result)
    after = msgspec.structs.replace(
        again,
        runtime_services=result.runtime_services,
        runtime_provisioning=result.runtime_provisioning,
    )
    return warned(RuntimeControlAnswer(workspace=after, operation=result.operation), None)


async def _with_state(
    gateway: Gateway,
    principal: Principal,
    detail: ExecutionWorkspace,
    action: str,
    result: RuntimeControlResult,
) -> Response[Any]:
    """The detail with the supervisor's runtime state asked after the action (a supervisor that
    answers no provisioning with it), or with the rows the action answered with when the
    supervisor is gone since."""
    facts = await runtime_state(gateway, principal, workspace_id=detail.id)
    if facts.state is None:
        answered = msgspec.structs.replace(detail, runtime_services=result.runtime_services)
        warning = (
            f"The workspace could not be read whole after the {action}: runtimeServices are "
            f"those the {action} answered with; runtimeProvisioning is not shown."
        )
        return warned(RuntimeControlAnswer(workspace=answered, operation=result.operation), warning)
    after = msgspec.structs.replace(
        detail,
        runtime_services=facts.state.runtime_services,
        runtime_provisioning=facts.state.runtime_provisioning,
    )
    return warned(RuntimeControlAnswer(workspace=after, operation=result.operation), None)
