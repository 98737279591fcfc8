"""Composition root and lifecycle of the heartbeat-controller."""

from __future__ import annotations

from collections.abc import Mapping

from heartbeat_controller import __version__
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.publishing import to_contract
from heartbeat_controller.settings import SERVICE_NAME, load_settings
from servicekit import ServiceSpec, run_service

__all__ = ["build_spec", "main"]


def build_spec() -> ServiceSpec:
    """The heartbeat-controller as ``run_service`` runs it; tests rebuild it with other parts."""
    return ServiceSpec(
        token="controller",
        name=SERVICE_NAME,
        version=__version__,
        application_class=HeartbeatControllerApplication,
        to_contract=to_contract,
        register=None,
        description=__doc__ or SERVICE_NAME,
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the heartbeat-controller until SIGTERM or SIGINT."""
    await run_service(build_spec(), load_settings(env))
