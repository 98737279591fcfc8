"""Endpoints of runs: ``ws.qry.run.get|list`` and ``ws.cmd.run.cancel`` (API.md "Agents,
wakes, runs")."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from contracts.agents import CancelRun, GetRun, ListRuns, RunView
from contracts.heartbeat_subjects import RUN_CANCEL, RUN_GET, RUN_LIST
from heartbeat_controller.endpoints.hooks import OnCancel, call_hook

if TYPE_CHECKING:
    from contracts.workspace_views import Page
    from heartbeat_controller.application import HeartbeatControllerApplication
    from natsbus import RequestContext
    from servicekit import ServiceRuntime

__all__ = ["register_runs"]


async def register_runs(runtime: ServiceRuntime, *, on_cancel: OnCancel | None = None) -> None:
    """Add the run endpoints to the service.

    Args:
        runtime: The running service (its application is a ``HeartbeatControllerApplication``).
        on_cancel: Awaited with the run's id for a running run whose cancel was requested;
            not for a queued run: that one ended ``cancelled`` at once.
    """
    app = cast("HeartbeatControllerApplication", runtime.app)

    async def get(q: GetRun, ctx: RequestContext) -> RunView:
        return await runtime.store(app.get_run, q.principal, q.run_id)

    async def list_(q: ListRuns, ctx: RequestContext) -> Page[RunView]:
        return await runtime.store(app.list_runs, q.principal, q.filters, q.limit, q.offset)

    async def cancel(c: CancelRun, ctx: RequestContext) -> RunView:
        view, act = await runtime.store(app.request_cancel, c.principal, c.run_id)
        if act:
            await call_hook(on_cancel, c.run_id)
        return view

    service = runtime.service
    await service.add_endpoint("run_get", RUN_GET, get, GetRun)
    await service.add_endpoint("run_list", RUN_LIST, list_, ListRuns)
    await service.add_endpoint("run_cancel", RUN_CANCEL, cancel, CancelRun)
