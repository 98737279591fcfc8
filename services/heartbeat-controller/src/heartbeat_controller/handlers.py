"""The ``register`` hook of the heartbeat-controller: the orchestration (ports over the bus,
dispatcher), the inboxes' hand-over hooks, the agent and run endpoints (the service answers pings
before this hook runs, so they come before anything slow), restart recovery of the runs left
``running``, then the dispatcher's loop. On shutdown the dispatcher and every run task stop; the
runs stay ``running`` for the next start's recovery."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from heartbeat_controller.endpoints import register_agents, register_runs
from heartbeat_controller.inbox import RunHandOffs
from heartbeat_controller.orchestration.context import Orchestration, RunSettings
from heartbeat_controller.orchestration.dispatcher import Dispatcher
from heartbeat_controller.orchestration.ports import RunPorts, bus_ports
from heartbeat_controller.orchestration.recovery import recover_runs

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from contracts.agents import WakeAccepted
    from heartbeat_controller.inbox import HandOffs
    from heartbeat_controller.settings import ControllerSettings
    from servicekit import ServiceRuntime

__all__ = ["make_register", "run_settings"]

_CLOSE_SHARE = 1.0
"""Seconds the run tasks get to end once cancelled at shutdown."""


def run_settings(settings: ControllerSettings) -> RunSettings:
    """The orchestration's settings from the controller's."""
    return RunSettings(
        api_url=settings.api_url,
        kill_grace=settings.kill_grace,
        end_wait=settings.end_wait,
        slot_retry_max=settings.slot_retry_max,
        tick=settings.tick,
        prepare_timeout=settings.prepare_timeout,
    )


def make_register(
    settings: ControllerSettings,
    hooks: HandOffs,
    ports: Callable[[ServiceRuntime], RunPorts] | None = None,
) -> Callable[[ServiceRuntime], Awaitable[None]]:
    """The ``register`` hook of the controller's ``ServiceSpec``.

    Args:
        settings: The controller's settings.
        hooks: Receives the orchestration's hand-over hooks for the inboxes.
        ports: Builds the run's ports (tests); by default the bus ports of this node.
    """

    async def register(runtime: ServiceRuntime) -> None:
        node = runtime.settings.node_id
        built = ports(runtime) if ports is not None else bus_ports(runtime.bus, node)
        orch = Orchestration(
            app=runtime.app, store=runtime.store, ports=built, settings=run_settings(settings)
        )
        dispatcher = Dispatcher(orch)
        loop = asyncio.get_running_loop()
        # First: an inbox message may already be waiting for the hooks on the store thread.
        handoffs = RunHandOffs(loop, nudge=dispatcher.nudge, deliver_end=orch.deliver_end)
        hooks.set(handoffs)
        # A lease handed over by any save (a run moving to another workspace, a finish, a
        # cancel of a queued run) wakes the run that waited for it.
        runtime.app.on_workspace_handed.append(  # type: ignore[attr-defined]
            lambda run_ids: handoffs.call_soon(orch.hand_over, run_ids)
        )

        async def close() -> None:
            await dispatcher.stop()
            await orch.close(_CLOSE_SHARE)

        runtime.exit_stack.push_async_callback(close)

        async def on_wake(_accepted: WakeAccepted) -> None:
            dispatcher.nudge()

        async def on_cancel(run_id: str) -> None:
            orch.request_cancel(run_id)  # kept until recovery opens the run's channel
            dispatcher.nudge()

        async def on_agent_deleted(run_ids: list[str]) -> None:
            for run_id in run_ids:
                orch.request_cancel(run_id)
            dispatcher.nudge()

        revoked = await runtime.store(runtime.app.revoke_board_trust)  # type: ignore[attr-defined]
        if revoked:
            log.warning("%d agents marked trusted by a board key run contained now", revoked)
        # The endpoints first, and the service says it is up before recovery (which may wait on
        # the supervisor): these only touch the store (a wake queues, a cancel is recorded and
        # reaches its run's task once recovery re-attached it). Nothing starts a run before
        # recovery.
        await register_agents(runtime, on_wake=on_wake, on_agent_deleted=on_agent_deleted)
        await register_runs(runtime, on_cancel=on_cancel)
        await runtime.nc.flush()
        await runtime.service.announce()
        await recover_runs(orch, dispatcher)
        dispatcher.start()

    return register
