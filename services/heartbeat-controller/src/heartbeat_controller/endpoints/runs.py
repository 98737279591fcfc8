"""Endpoints of runs: ``ws.qry.run.get|list`` and ``ws.cmd.run.cancel`` (API.md "Agents,
wakes, runs")."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from contracts.agents import CancelRun, GetRun, ListRuns, RunView
from contracts.heartbeat_subjects import RUN_CANCEL, RUN_GET, RUN_LIST
from heartbeat_controller.endpoints.common import OnCancel, call_hook
from servicekit.routes import BusEndpoints, Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.workspace_views import Page
    from heartbeat_controller.application import HeartbeatControllerApplication
    from natsbus import RequestContext
    from servicekit import ServiceRuntime

__all__ = ["RunEndpoints"]


class RunEndpoints(BusEndpoints):
    """The run endpoints, answered from the application on the store's thread.

    Args:
        runtime: The running service (its application is a ``HeartbeatControllerApplication``).
        on_cancel: Awaited with the run's id for a running run whose cancel was requested;
            not for a queued run: that one ended ``cancelled`` at once.
    """

    def __init__(self, runtime: ServiceRuntime, *, on_cancel: OnCancel | None = None) -> None:
        self._runtime = runtime
        self._app = cast("HeartbeatControllerApplication", runtime.app)
        self._on_cancel = on_cancel

    async def get(self, q: GetRun, ctx: RequestContext) -> RunView:
        """``ws.qry.run.get``."""
        return await self._runtime.store(self._app.get_run, q.principal, q.run_id)

    async def list_(self, q: ListRuns, ctx: RequestContext) -> Page[RunView]:
        """``ws.qry.run.list``."""
        return await self._runtime.store(
            self._app.list_runs, q.principal, q.filters, q.limit, q.offset
        )

    async def cancel(self, c: CancelRun, ctx: RequestContext) -> RunView:
        """``ws.cmd.run.cancel``; a running run's id is handed to ``on_cancel``."""
        view, act = await self._runtime.store(self._app.request_cancel, c.principal, c.run_id)
        if act:
            await call_hook(self._on_cancel, c.run_id)
        return view

    def routes(self) -> Sequence[Route]:
        """The run endpoints."""
        return (
            Route("run_get", RUN_GET, self.get, GetRun),
            Route("run_list", RUN_LIST, self.list_, ListRuns),
            Route("run_cancel", RUN_CANCEL, self.cancel, CancelRun),
        )
