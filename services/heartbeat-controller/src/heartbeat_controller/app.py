"""Composition root and lifecycle of the heartbeat-controller."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from heartbeat_controller import __version__
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.handlers import make_register
from heartbeat_controller.inbox import HandOffs, realizer_inbox, supervisor_inbox
from heartbeat_controller.orchestration.ports import RunPorts
from heartbeat_controller.publishing import to_contract
from heartbeat_controller.settings import (
    SERVICE_NAME,
    ControllerSettings,
    load_controller_settings,
)
from servicekit import ServiceRuntime, ServiceSpec, run_service

__all__ = ["build_spec", "main"]


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
