"""Composition root and lifecycle of the workspace-realizer."""

from __future__ import annotations

from collections.abc import Mapping

from servicekit import ServiceSpec, run_service
from workspace_realizer import __version__
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.handlers import AppHolder, gateway_inbox, make_register
from workspace_realizer.host import HostPorts, default_ports
from workspace_realizer.publishing import to_contract
from workspace_realizer.settings import SERVICE_NAME, RealizerSettings, load_realizer_settings

__all__ = ["build_spec", "main"]


def build_spec(
    settings: RealizerSettings | None = None, ports: HostPorts | None = None
) -> ServiceSpec:
    """The workspace-realizer as ``run_service`` runs it; tests rebuild it with other parts
    (fake host ports, other settings)."""
    settings = settings or load_realizer_settings()
    holder = AppHolder()
    return ServiceSpec(
        token="realizer",
        name=SERVICE_NAME,
        version=__version__,
        application_class=WorkspaceRealizerApplication,
        to_contract=to_contract,
        register=make_register(settings, ports or default_ports(settings.service.home), holder),
        upstreams={"gateway": gateway_inbox(holder)},
        description=__doc__ or SERVICE_NAME,
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the workspace-realizer until SIGTERM or SIGINT."""
    settings = load_realizer_settings(env)
    await run_service(build_spec(settings), settings.service)
