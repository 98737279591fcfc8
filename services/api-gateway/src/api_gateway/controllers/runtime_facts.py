"""The runtime-supervisor's facts on workspace reads: runtime services and runtime provisioning.

The workspace-realizer answers a workspace's detail and close readiness; the runtime-supervisor
owns its runtime services and lazy runtime provisioning (ARCHITECTURE §1). The gateway asks both
at once and lays the supervisor's facts over the realizer's answer. A supervisor that does not
answer (not running, too slow, or an answer the gateway cannot read) does not fail the read: the
realizer's facts are answered as they are (an empty service list), the ``X-Clipyard-Warning``
header says what is missing, and a warning is logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import msgspec
from litestar import Response
from litestar.datastructures import ResponseHeader

from api_gateway.controllers.realizer import fetch
from api_gateway.http.dependencies import Gateway
from contracts import workspace_subjects as subjects
from contracts.base import ErrorReply, Ok, Principal
from contracts.execution_commands import GetCloseReadiness, GetExecutionWorkspace
from contracts.execution_views import CloseReadiness, ExecutionWorkspace
from contracts.runtime_commands import GetRuntimeState, RuntimeState
from contracts.runtime_subjects import RUNTIME_STATE
from contracts.subjects import SERVICE_NAMES

__all__ = [
    "WARNING_HEADER",
    "WARNING_HEADERS",
    "RuntimeFacts",
    "close_readiness",
    "runtime_state",
    "warned",
    "workspace_detail",
]

T = TypeVar("T")

log = logging.getLogger(__name__)

WARNING_HEADER: Final = "X-Clipyard-Warning"
WARNING_HEADERS: Final = [
    ResponseHeader(
        name=WARNING_HEADER,
        description=(
            "Present when a service that adds to this answer did not answer (the runtime-"
            "supervisor, say): the rest is answered and this sentence says what is missing."
        ),
        required=False,
        documentation_only=True,
    )
]
_SUPERVISOR: Final = SERVICE_NAMES["supervisor"]


@dataclass(frozen=True)
class RuntimeFacts:
    """What the supervisor said about a workspace: its state, or why there is none."""

    state: RuntimeState | None
    warning: str | None = None


async def runtime_state(
    gateway: Gateway,
    principal: Principal,
    *,
    workspace_id: str | None = None,
    project_workspace_id: str | None = None,
    probe_health: bool = False,
) -> RuntimeFacts:
    """Ask the supervisor for a workspace's runtime facts; never raises for its answer.

    Args:
        gateway: The gateway (its bus and query timeout).
        principal: Who asks (the supervisor checks the company).
        workspace_id: An execution workspace.
        project_workspace_id: Or a project workspace.
        probe_health: Re-probe running services first (detail reads).

    Returns:
        The state, or no state and a sentence saying why (logged as a warning).
    """
    query = GetRuntimeState(
        principal=principal,
        workspace_id=workspace_id,
        project_workspace_id=project_workspace_id,
        probe_health=probe_health,
    )
    reply = await gateway.bus.request(RUNTIME_STATE, query, timeout=gateway.settings.query_timeout)
    target = workspace_id or project_workspace_id
    if isinstance(reply, Ok):
        try:
            return RuntimeFacts(msgspec.convert(reply.result, RuntimeState))
        except msgspec.ValidationError as exc:
            reason = f"did not answer (an answer the gateway cannot read: {exc})"
    elif isinstance(reply, ErrorReply) and reply.code not in ("service_unavailable", "timeout"):
        reason = f"answered {reply.code}: {reply.message}"
    else:
        reason = f"did not answer ({getattr(reply, 'code', 'accepted')})"
    warning = f"{_SUPERVISOR} {reason}: runtimeServices and runtimeProvisioning are not shown."
    log.warning("runtime facts of workspace %s: %s", target, warning)
    return RuntimeFacts(None, warning)


async def _alongside(
    read: Awaitable[T], facts: Coroutine[Any, Any, RuntimeFacts]
) -> tuple[T, RuntimeFacts]:
    """Await ``read`` and ``facts`` together; a failing ``read`` cancels ``facts``."""
    task = asyncio.ensure_future(facts)
    try:
        value = await read
    except BaseException:
        task.cancel()
        raise
    return value, await task


async def workspace_detail(
    gateway: Gateway, principal: Principal, workspace_id: str, *, probe_health: bool = True
) -> tuple[ExecutionWorkspace, str | None]:
    """An execution workspace as ``GET /api/execution-workspaces/{id}`` answers it.

    The realizer's detail (404 for another company's) with the supervisor's ``runtimeServices``
    and ``runtimeProvisioning``; when the supervisor does not answer, the realizer's answer as it
    is and a warning.

    Raises:
        BusReplyError: The realizer refused or did not answer.
    """
    query = GetExecutionWorkspace(principal=principal, workspace_id=workspace_id)
    workspace, facts = await _alongside(
        fetch(gateway, subjects.WORKSPACE_GET, query, ExecutionWorkspace),
        runtime_state(gateway, principal, workspace_id=workspace_id, probe_health=probe_health),
    )
    if facts.state is None:
        return workspace, facts.warning
    composed = msgspec.structs.replace(
        workspace,
        runtime_services=facts.state.runtime_services,
        runtime_provisioning=facts.state.runtime_provisioning,
    )
    return composed, None


async def close_readiness(
    gateway: Gateway, principal: Principal, workspace_id: str
) -> tuple[CloseReadiness, str | None]:
    """The realizer's close readiness with the supervisor's ``runtimeServices`` (not re-probed).

    Raises:
        BusReplyError: The realizer refused or did not answer.
    """
    query = GetCloseReadiness(principal=principal, workspace_id=workspace_id)
    readiness, facts = await _alongside(
        fetch(gateway, subjects.WORKSPACE_CLOSE_READINESS, query, CloseReadiness),
        runtime_state(gateway, principal, workspace_id=workspace_id, probe_health=False),
    )
    if facts.state is None:
        return readiness, facts.warning
    return msgspec.structs.replace(readiness, runtime_services=facts.state.runtime_services), None


def warned(body: T, warning: str | None, *, status_code: int = 200) -> Response[T]:
    """``body`` as an answer, with ``X-Clipyard-Warning`` when something is missing from it."""
    headers = None
    if warning:
        # A header is one line of latin-1: keep printable ASCII only.
        headers = {WARNING_HEADER: "".join(c if " " <= c <= "~" else " " for c in warning)}
    return Response(body, status_code=status_code, headers=headers)
