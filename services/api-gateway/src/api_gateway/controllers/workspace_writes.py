"""What a write of an execution workspace answers: the workspace as a GET right after reads it.

The realizer answers a realize, an update (archive and reopen included) and a branch reconcile
with the workspace as it recorded it: without asking git (``deliveryState: "unknown"``,
``commitsAhead: null``) and without the supervisor's runtime services. So the gateway reads the
workspace again through the GET's own path (:func:`~api_gateway.controllers.runtime_facts.
workspace_detail`, services not re-probed) once the write is done, and answers that: a write
answers what ``GET /api/execution-workspaces/{id}`` would at that moment. The write happened
whatever the read does: a read that fails leaves the realizer's answer as it is, with
``X-Clipyard-Warning`` saying what it lacks. Long work (202) is answered as it always is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from litestar import Response

from api_gateway.controllers.realizer import accepted, request_result
from api_gateway.controllers.runtime_facts import warned, workspace_detail
from api_gateway.http.dependencies import Gateway
from api_gateway.http.errors import BusReplyError
from contracts.base import Accepted, Principal
from contracts.execution_views import ExecutionWorkspace, RealizeResult, ReconcileResult

__all__ = ["perform_and_read"]

log = logging.getLogger(__name__)

W = TypeVar("W", ExecutionWorkspace, RealizeResult, ReconcileResult)


def _workspace_of(
    result: ExecutionWorkspace | RealizeResult | ReconcileResult,
) -> ExecutionWorkspace:
    return result if isinstance(result, ExecutionWorkspace) else result.workspace


def _with(result: W, workspace: ExecutionWorkspace) -> W:
    if isinstance(result, ExecutionWorkspace):
        return workspace  # type: ignore[return-value]
    return msgspec.structs.replace(result, workspace=workspace)  # type: ignore[return-value]


async def perform_and_read(
    gateway: Gateway,
    principal: Principal,
    subject: str,
    command: Any,
    view: type[W],
    *,
    action: str,
    status_code: int | Callable[[W], int] = 200,
) -> Response[Any]:
    """Send a workspace write, then answer its result with the workspace as a GET reads it.

    Args:
        gateway: The gateway (its bus and timeouts).
        principal: Who writes (and reads it after).
        subject: The realizer's command subject.
        command: The command.
        view: The result's view (the workspace, or a result holding it as ``workspace``).
        action: What the write is, for a warning (``realize``, ``update``...).
        status_code: The answer's status, or the function of the result giving it.

    Returns:
        The result with the workspace read again; 202 ``{operationId}`` for long work.

    Raises:
        BusReplyError: The realizer refused the write or did not answer it.
    """
    result = await request_result(gateway, subject, command, view)
    if isinstance(result, Accepted):
        return accepted(result)
    status = status_code(result) if callable(status_code) else status_code
    written = _workspace_of(result)
    try:
        # Bounded by the query timeout: the write is done, its answer must not wait a second
        # request deadline for the re-read.
        detail, warning = await asyncio.wait_for(
            workspace_detail(gateway, principal, written.id, probe_health=False),
            gateway.settings.query_timeout,
        )
    except (BusReplyError, TimeoutError) as exc:
        log.warning("reading workspace %s after its %s: %s", written.id, action, exc)
        warning = (
            f"The workspace could not be read after the {action}: it is answered as the "
            "workspace-realizer recorded it, without its delivery state or runtime services."
        )
        return warned(result, warning, status_code=status)
    return warned(_with(result, detail), warning, status_code=status)
