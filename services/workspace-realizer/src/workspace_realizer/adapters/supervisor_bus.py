"""The runtime-supervisor over the bus, as the archive saga asks it: stop a workspace's runtime
services (``ws.cmd.runtime_service.stop_workspace.<node>``) and say how many it stopped."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import msgspec

import contracts.workspace_subjects as subjects
from contracts.base import Accepted, Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import (
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from workspace_realizer.settings import SERVICE_NAME

if TYPE_CHECKING:
    from servicekit import ServiceRuntime

__all__ = ["STOP_TIMEOUT", "StopServicesError", "supervisor_stopper"]

STOP_TIMEOUT = 60.0
"""Seconds the archive saga waits for the supervisor to stop a workspace's services."""


class StopServicesError(RuntimeError):
    """The supervisor did not confirm that the workspace's runtime services are stopped."""


def supervisor_stopper(runtime: ServiceRuntime) -> Callable[[str, str, int], Awaitable[int]]:
    """Ask the supervisor of this node to stop a workspace's runtime services (a real request:
    ``ws.cmd.runtime_service.stop_workspace.<node>``); return how many it stopped."""
    subject = subjects.stop_workspace_runtime_services(runtime.settings.node_id)

    async def stop(company_id: str, workspace_id: str, generation: int) -> int:
        principal = Principal(company_id=company_id, actor=Actor(type="system", id=SERVICE_NAME))
        request = StopWorkspaceRuntimeServices(
            principal=principal, workspace_id=workspace_id, lifecycle_generation=generation
        )
        reply = await runtime.bus.request(subject, request, timeout=STOP_TIMEOUT)
        if isinstance(reply, ErrorReply):
            raise StopServicesError(
                f"the runtime supervisor answered {reply.code}: {reply.message}"
            )
        if isinstance(reply, Accepted):
            raise StopServicesError(
                "the runtime supervisor is still stopping them; retry the archive"
            )
        assert isinstance(reply, Ok)
        result: StopWorkspaceRuntimeServicesResult = msgspec.convert(
            reply.result, StopWorkspaceRuntimeServicesResult
        )
        if result.failed:
            raise StopServicesError(f"still running: {', '.join(result.failed)}")
        stopped: int = result.stopped
        return stopped

    return stop
