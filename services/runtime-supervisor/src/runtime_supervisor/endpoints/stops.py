"""Endpoints of the stops other parts of Clipyard ask for: the realizer's archive saga
(``StopWorkspaceRuntimeServices``, waited for before the directory is removed), ``clipyard up``
on Ctrl-C (``StopAllRuntimeServices``) and another node's supervisor that heard a run finish
whose slot or released services are this node's (``RunEndedHere``,
:mod:`runtime_supervisor.orchestration.run_end`). What each stops, and how, is
:mod:`runtime_supervisor.orchestration.stop_requests`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts import subjects
from contracts.execution_commands import (
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.runtime_commands import RunEndedHere
from contracts.runtime_subjects import run_ended
from contracts.service import StopAllRuntimeServices, StopAllRuntimeServicesResult
from contracts.workspace_subjects import stop_workspace_runtime_services
from runtime_supervisor.endpoints.common import SupervisorEndpoints
from runtime_supervisor.orchestration.stop_requests import stop_everything, stop_workspace
from servicekit.access import Access, AccessDeniedError, ActorKind
from servicekit.routes import Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from natsbus import RequestContext
    from runtime_supervisor.orchestration.context import Supervisor
    from runtime_supervisor.orchestration.run_end import RunEnd
    from servicekit import ServiceRuntime

__all__ = ["StopEndpoints"]


class StopEndpoints(SupervisorEndpoints):
    """The stop-workspace, stop-all and run-ended endpoints."""

    def __init__(self, runtime: ServiceRuntime, sup: Supervisor, run_end: RunEnd) -> None:
        super().__init__(runtime, sup)
        self.run_end = run_end

    def routes(self) -> Sequence[Route]:
        return (
            Route("run_ended", run_ended(self.node), self.ended, RunEndedHere),
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
        reason = c.reason or "workspace archived"
        with self.acting(c.principal, reason):
            scope = Access.of(c.principal).scope()
            return await stop_workspace(self.sup, c.workspace_id, scope, reason=reason)

    async def stop_all(
        self, c: StopAllRuntimeServices, ctx: RequestContext
    ) -> StopAllRuntimeServicesResult:
        with self.acting(c.principal, "stop all"):
            return await stop_everything(self.sup, self.node)

    async def ended(self, c: RunEndedHere, ctx: RequestContext) -> None:
        """A run finished that holds a slot or released services of this node."""
        if Access.of(c.principal).kind is not ActorKind.SYSTEM:
            raise AccessDeniedError(
                "Only Clipyard itself (another node's runtime-supervisor) tells a node that a run "
                "ended."
            )
        with self.acting(c.principal, "its run finished", run_id=c.run_id):
            await self.run_end.here(c.run_id, c.released_service_ids)
