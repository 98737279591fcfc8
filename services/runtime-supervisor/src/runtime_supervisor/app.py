"""Composition root and lifecycle of the runtime-supervisor."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from runtime_supervisor import __version__
from runtime_supervisor.adapters.containment.launcher import Launcher
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.endpoints import (
    AuditEndpoints,
    ContainedEndpoints,
    RuntimeEndpoints,
    SlotEndpoints,
    StopEndpoints,
)
from runtime_supervisor.endpoints.nodes import NodeEndpoints
from runtime_supervisor.inbox import (
    RunFinishedHandOver,
    controller_inbox,
    gateway_inbox,
    realizer_inbox,
)
from runtime_supervisor.orchestration.adoption import adopt_all
from runtime_supervisor.orchestration.context import Supervisor, as_system
from runtime_supervisor.orchestration.egress import watch_egress
from runtime_supervisor.orchestration.nodes import NodeDirectory, hold_node
from runtime_supervisor.orchestration.run_end import RunEnd
from runtime_supervisor.orchestration.slots.runtime import SlotRuntime
from runtime_supervisor.publishing import to_contract
from runtime_supervisor.settings import (
    SERVICE_NAME,
    SupervisorSettings,
    load_supervisor_settings,
)
from servicekit import ServiceSpec, run_service
from servicekit.routes import mount

if TYPE_CHECKING:
    from servicekit import ServiceRuntime

__all__ = ["build_spec", "main", "make_register"]

_CLOSE_SHARE = 0.5
"""Seconds the supervisor's tasks get to end once cancelled at shutdown."""


def make_register(
    settings: SupervisorSettings, run_finished: RunFinishedHandOver
) -> Callable[[ServiceRuntime], Awaitable[None]]:
    """The ``register`` hook of the supervisor's ``ServiceSpec``: the orchestration's context,
    the inbox's run-finished hook, adoption of the services a previous supervisor left running
    (DECISIONS 7), then the endpoints; on shutdown the supervisor's own tasks stop and every
    service keeps running (only ``stop_all`` stops them).

    Args:
        settings: The supervisor's settings.
        run_finished: Hands the orchestration's hook for finished runs to the inbox.
    """

    async def register(runtime: ServiceRuntime) -> None:
        app: RuntimeSupervisorApplication = runtime.app  # type: ignore[assignment]
        # One supervisor per node: its lease first, before anything of the node is touched.
        await hold_node(runtime)
        app.node_id = runtime.settings.node_id  # its sweeps and reservations: this node's only
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
        run_end = RunEnd(sup, runtime)  # on this node, or told to the node holding it
        run_finished.set(run_end.hook(loop))

        async def close() -> None:
            await sup.close(_CLOSE_SHARE)

        runtime.exit_stack.push_async_callback(close)
        nodes = NodeDirectory(runtime, settings, __version__)
        with as_system("the node's supervisor started"):
            await runtime.store(
                app.register_node,
                runtime.settings.node_id,
                instance=runtime.settings.instance_id,
                version=__version__,
                capacity=nodes.own_info().capacity,
            )
        try:
            await adopt_all(sup)
        finally:
            sup.adopted.set()
        if sup.launcher.available:
            sup.spawn(watch_egress(sup), name="egress-watch")
        sup.slots = SlotRuntime(sup=sup, launcher=sup.launcher)
        await sup.slots.recover()
        await mount(
            runtime.service,
            SlotEndpoints(runtime, sup),
            RuntimeEndpoints(runtime, sup),
            StopEndpoints(runtime, sup, run_end),
            AuditEndpoints(runtime, sup),
            ContainedEndpoints(runtime, sup),
            NodeEndpoints(runtime, sup, nodes),
        )

    return register


def build_spec(settings: SupervisorSettings | None = None) -> ServiceSpec:
    """The runtime-supervisor as ``run_service`` runs it; tests rebuild it with other settings."""
    settings = settings or load_supervisor_settings()
    run_finished = RunFinishedHandOver("the runtime-supervisor's orchestration")
    return ServiceSpec(
        token="supervisor",
        name=SERVICE_NAME,
        version=__version__,
        application_class=RuntimeSupervisorApplication,
        to_contract=to_contract,
        register=make_register(settings, run_finished),
        upstreams={
            "realizer": realizer_inbox,
            "controller": controller_inbox(run_finished),
            "gateway": gateway_inbox,
        },
        description=__doc__ or SERVICE_NAME,
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the runtime-supervisor until SIGTERM or SIGINT."""
    settings = load_supervisor_settings(env)
    await run_service(build_spec(settings), settings.service)
