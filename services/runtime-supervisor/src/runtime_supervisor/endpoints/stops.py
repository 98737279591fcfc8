"""Endpoints of the stops other parts of Clipyard ask for: the realizer's archive saga
(``StopWorkspaceRuntimeServices``, waited for before the directory is removed) and
``clipyard up`` on Ctrl-C (``StopAllRuntimeServices``). What each stops, and how, is
:mod:`runtime_supervisor.orchestration.stop_requests`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts import subjects
from contracts.execution_commands import (
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.service import StopAllRuntimeServices, StopAllRuntimeServicesResult
from contracts.workspace_subjects import stop_workspace_runtime_services
from runtime_supervisor.endpoints.common import SupervisorEndpoints
from runtime_supervisor.orchestration.stop_requests import stop_everything, stop_workspace
from servicekit.access import Access
from servicekit.routes import Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from natsbus import RequestContext

__all__ = ["StopEndpoints"]


class StopEndpoints(SupervisorEndpoints):
    """The stop-workspace and stop-all endpoints."""

    def routes(self) -> Sequence[Route]:
        return (
            Route(
                "stop_workspace",
                stop_workspace_runtime_services(self.node),
                self.stop_workspace,
                StopWorkspaceRuntimeServices,
            ),
            Route(
                "stop_all",
                subjects.command("runtime_service", "stop_all", self.node),
                self.stop_all,
                StopAllRuntimeServices,
            ),
        )

    async def stop_workspace(
        self, c: StopWorkspaceRuntimeServices, ctx: RequestContext
    ) -> StopWorkspaceRuntimeServicesResult:
        with self.acting(c.principal, "workspace archived"):
            scope = Access.of(c.principal).scope()
            return await stop_workspace(self.sup, c.workspace_id, scope)

    async def stop_all(
        self, c: StopAllRuntimeServices, ctx: RequestContext
    ) -> StopAllRuntimeServicesResult:
        with self.acting(c.principal, "stop all"):
            return await stop_everything(self.sup, self.node)
