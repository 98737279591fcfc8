"""The ``register`` hook of the runtime-supervisor: the orchestration's context, the inbox's
run-finished hook, adoption of the services a previous supervisor left running (DECISIONS 7),
then the endpoints; on shutdown the supervisor's own tasks stop and every service keeps
running (only ``stop_all`` stops them)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from runtime_supervisor.adoption import adopt_all
from runtime_supervisor.containment.launcher import Launcher
from runtime_supervisor.context import Supervisor
from runtime_supervisor.egress import watch_egress
from runtime_supervisor.endpoints import (
    Endpoints,
    register_audit,
    register_contained,
    register_runtime,
    register_slots,
    register_stops,
)
from runtime_supervisor.inbox import RunFinishedHook
from runtime_supervisor.runs import run_finished_hook
from runtime_supervisor.slots.runtime import SlotRuntime

if TYPE_CHECKING:
    from runtime_supervisor.application import RuntimeSupervisorApplication
    from runtime_supervisor.inbox import RunFinishedHandOver
    from runtime_supervisor.settings import SupervisorSettings
    from runtime_supervisor.usecases.services import Release
    from servicekit import ServiceRuntime

__all__ = ["make_register"]

_CLOSE_SHARE = 0.5
"""Seconds the supervisor's tasks get to end once cancelled at shutdown."""


def make_register(
    settings: SupervisorSettings, run_finished: RunFinishedHandOver
) -> Callable[[ServiceRuntime], Awaitable[None]]:
    """The ``register`` hook of the supervisor's ``ServiceSpec``.

    Args:
        settings: The supervisor's settings.
        run_finished: Hands the orchestration's hook for finished runs to the inbox.
    """

    async def register(runtime: ServiceRuntime) -> None:
        app: RuntimeSupervisorApplication = runtime.app  # type: ignore[assignment]
        sup = Supervisor(
            app=app, store=runtime.store, settings=settings, node_id=runtime.settings.node_id
        )
        # Probed on the loop (a few file operations); a finished run's releases wait for the
        # adoption below all the same.
        sup.launcher = Launcher.start(
            settings.home,
            settings.sandbox_paths,
            egress_open=settings.egress_host_networks,
            service_ports=settings.port_range,
        )
        sup.adopted.clear()  # before an inbox message can act
        # First: an inbox message may already be waiting for the hook on the store thread.
        loop = asyncio.get_running_loop()
        run_finished.set(_with_slots(sup, run_finished_hook(sup, loop), loop))

        async def close() -> None:
            await sup.close(_CLOSE_SHARE)

        runtime.exit_stack.push_async_callback(close)
        try:
            await adopt_all(sup)
        finally:
            sup.adopted.set()
        if sup.launcher.available:
            sup.spawn(watch_egress(sup), name="egress-watch")
        sup.slots = SlotRuntime(sup=sup, launcher=sup.launcher)
        await sup.slots.recover()
        endpoints = Endpoints(runtime, sup)
        groups = (
            register_slots,
            register_runtime,
            register_stops,
            register_audit,
            register_contained,
        )
        for group in groups:
            await group(endpoints)

    return register


def _with_slots(
    sup: Supervisor, hook: RunFinishedHook, loop: asyncio.AbstractEventLoop
) -> RunFinishedHook:
    """The run-finished hook plus the run's slot: freed (its adapter killed if it still runs)."""

    def both(run_id: str, releases: list[Release]) -> None:
        hook(run_id, releases)
        slots = sup.slots
        if slots is not None:
            loop.call_soon_threadsafe(slots.run_finished, run_id)

    return both
