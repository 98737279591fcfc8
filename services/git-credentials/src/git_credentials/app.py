"""Composition root and lifecycle of the git-credentials."""

from __future__ import annotations

from collections.abc import Mapping

from git_credentials import __version__
from git_credentials.application import GitCredentialsApplication
from git_credentials.publishing import to_contract
from git_credentials.settings import SERVICE_NAME, load_settings
from servicekit import ServiceSpec, run_service

__all__ = ["build_spec", "main"]


def build_spec() -> ServiceSpec:
    """The git-credentials as ``run_service`` runs it; tests rebuild it with other parts."""
    return ServiceSpec(
        token="credentials",
        name=SERVICE_NAME,
        version=__version__,
        application_class=GitCredentialsApplication,
        to_contract=to_contract,
        register=None,
        description=__doc__ or SERVICE_NAME,
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the git-credentials until SIGTERM or SIGINT."""
    await run_service(build_spec(), load_settings(env))
