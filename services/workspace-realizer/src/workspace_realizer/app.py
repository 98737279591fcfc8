"""Composition root and lifecycle of the workspace-realizer."""

from __future__ import annotations

from collections.abc import Mapping

from servicekit import ServiceSpec, run_service
from workspace_realizer import __version__
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.publishing import to_contract
from workspace_realizer.settings import SERVICE_NAME, load_settings

__all__ = ["build_spec", "main"]


def build_spec() -> ServiceSpec:
    """The workspace-realizer as ``run_service`` runs it; tests rebuild it with other parts."""
    return ServiceSpec(
        token="realizer",
        name=SERVICE_NAME,
        version=__version__,
        application_class=WorkspaceRealizerApplication,
        to_contract=to_contract,
        register=None,
        description=__doc__ or SERVICE_NAME,
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the workspace-realizer until SIGTERM or SIGINT."""
    await run_service(build_spec(), load_settings(env))
