"""NATS endpoints of the runtime-supervisor: each decodes, calls the application, replies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts import subjects
from contracts.execution_commands import (
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.service import StopAllRuntimeServices, StopAllRuntimeServicesResult
from contracts.workspace_subjects import stop_workspace_runtime_services

if TYPE_CHECKING:
    from natsbus import RequestContext
    from servicekit import ServiceRuntime

__all__ = ["register"]


async def register(runtime: ServiceRuntime) -> None:
    """Add the supervisor's endpoints to its micro service."""
    node = runtime.settings.node_id

    async def stop_all(
        request: StopAllRuntimeServices, ctx: RequestContext
    ) -> StopAllRuntimeServicesResult:
        # The skeleton supervises nothing yet (the runtime issue gives it services and slots),
        # so it truthfully reports that it stopped none.
        return StopAllRuntimeServicesResult(node=node, services_stopped=0, slots_stopped=0)

    async def stop_workspace(
        request: StopWorkspaceRuntimeServices, ctx: RequestContext
    ) -> StopWorkspaceRuntimeServicesResult:
        # The archive saga waits for this answer; until the runtime issue gives the supervisor
        # services to run, no workspace has any, and that is the truthful answer.
        return StopWorkspaceRuntimeServicesResult(workspace_id=request.workspace_id, stopped=0)

    await runtime.service.add_endpoint(
        "stop_workspace",
        stop_workspace_runtime_services(node),
        stop_workspace,
        StopWorkspaceRuntimeServices,
    )
    await runtime.service.add_endpoint(
        "stop_all",
        subjects.command("runtime_service", "stop_all", node),
        stop_all,
        StopAllRuntimeServices,
    )
