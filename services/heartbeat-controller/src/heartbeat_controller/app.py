"""Composition root and lifecycle of the heartbeat-controller."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from heartbeat_controller import __version__
from heartbeat_controller.adapters.bus import bus_ports
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.endpoints import AgentEndpoints, RunEndpoints
from heartbeat_controller.inbox import HandOffs, RunHandOffs, realizer_inbox, supervisor_inbox
from heartbeat_controller.orchestration.context import Orchestration, RunSettings
from heartbeat_controller.orchestration.dispatcher import Dispatcher, EndpointHooks
from heartbeat_controller.orchestration.leading import RunsLeader
from heartbeat_controller.orchestration.ports import RunPorts
from heartbeat_controller.publishing import to_contract
from heartbeat_controller.settings import (
    SERVICE_NAME,
    ControllerSettings,
    load_controller_settings,
)
from servicekit import ServiceRuntime, ServiceSpec, run_service
from servicekit.routes import mount

__all__ = ["build_spec", "main", "make_register", "run_settings"]

log = logging.getLogger(__name__)


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

    It builds the orchestration (ports over the bus, dispatcher), hands the inboxes their
    hooks, adds the agent and run endpoints, and gives the runs to the service's lease: the
    holder recovers the runs left ``running`` and dispatches (:class:`RunsLeader`). On shutdown
    or a lost lease the dispatcher and every run task stop; the runs stay ``running`` for the
    next holder's recovery.

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
        # First: an inbox message may already be waiting for the hooks on the store thread.
        handoffs = RunHandOffs(
            asyncio.get_running_loop(), nudge=dispatcher.nudge, deliver_end=orch.deliver_end
        )
        hooks.set(handoffs)
        # A lease handed over by any save (a run moving to another workspace, a finish, a
        # cancel of a queued run) wakes the run that waited for it.
        runtime.app.on_workspace_handed.append(  # type: ignore[attr-defined]
            lambda run_ids: handoffs.call_soon(orch.hand_over, run_ids)
        )

        # The endpoints first, and the service says it is up before the runs are recovered
        # (which may wait on the supervisor): these only touch the store (a wake queues, a
        # cancel is recorded and reaches its run's task on the lease holder). The runs, their
        # recovery and the dispatcher run on the lease holder only (orchestration/leading.py).
        told = EndpointHooks(orch, dispatcher)
        await mount(
            runtime.service,
            AgentEndpoints(runtime, on_wake=told.woke, on_agent_deleted=told.agent_deleted),
            RunEndpoints(runtime, on_cancel=told.cancelled),
        )
        runtime.leadership.add("runs", RunsLeader(orch, dispatcher))

    return register


def build_spec(
    settings: ControllerSettings | None = None,
    ports: Callable[[ServiceRuntime], RunPorts] | None = None,
) -> ServiceSpec:
    """The heartbeat-controller as ``run_service`` runs it; tests rebuild it with other parts
    (other settings, fake ports)."""
    settings = settings or load_controller_settings()
    hooks = HandOffs("the heartbeat-controller's orchestration")
    return ServiceSpec(
        token="controller",
        name=SERVICE_NAME,
        version=__version__,
        application_class=HeartbeatControllerApplication,
        to_contract=to_contract,
        register=make_register(settings, hooks, ports),
        upstreams={"realizer": realizer_inbox(hooks), "supervisor": supervisor_inbox(hooks)},
        description=__doc__ or SERVICE_NAME,
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the heartbeat-controller until SIGTERM or SIGINT."""
    settings = load_controller_settings(env)
    await run_service(build_spec(settings), settings.service)
