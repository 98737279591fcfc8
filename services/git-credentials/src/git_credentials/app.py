"""Composition root and lifecycle of the git-credentials."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from git_credentials import __version__
from git_credentials.application import GitCredentialsApplication
from git_credentials.crypto import KeyRing
from git_credentials.endpoints.common import Endpoints
from git_credentials.endpoints.credentials import register_credentials
from git_credentials.endpoints.secrets import register_secrets
from git_credentials.masterkey import load_key_ring
from git_credentials.publishing import to_contract
from git_credentials.sealing import SecretSealer
from git_credentials.settings import (
    SERVICE_NAME,
    CredentialsSettings,
    load_credentials_settings,
)
from git_credentials.vault import open_vault
from servicekit import ServiceRuntime, ServiceSpec, run_service

__all__ = ["build_spec", "main", "make_register"]

Register = Callable[[ServiceRuntime], Awaitable[None]]


def make_register(settings: CredentialsSettings, keys: KeyRing) -> Register:
    """The ``register`` hook: open the key vault (rewrap, destroy deleted secrets' keys), then
    add the endpoints."""

    async def register(runtime: ServiceRuntime) -> None:
        app: GitCredentialsApplication = runtime.app  # type: ignore[assignment]
        vault = await runtime.store(open_vault, settings.service.store)
        runtime.exit_stack.push_async_callback(runtime.store, vault.close)
        await runtime.store(app.open_vault, SecretSealer(vault, keys))
        endpoints = Endpoints(runtime, app, settings)
        resolver = await register_credentials(endpoints)
        await register_secrets(endpoints, on_deleted=resolver.forget)

    return register


def build_spec(
    settings: CredentialsSettings | None = None, keys: KeyRing | None = None
) -> ServiceSpec:
    """The git-credentials as ``run_service`` runs it; tests rebuild it with other parts (other
    settings, other master keys)."""
    settings = settings or load_credentials_settings()
    if keys is None:
        keys = load_key_ring(
            settings.service.home, settings.secret_key, settings.previous_secret_keys
        )
    return ServiceSpec(
        token="credentials",
        name=SERVICE_NAME,
        version=__version__,
        application_class=GitCredentialsApplication,
        to_contract=to_contract,
        register=make_register(settings, keys),
        description=__doc__ or SERVICE_NAME,
    )


async def main(env: Mapping[str, str] | None = None) -> None:
    """Run the git-credentials until SIGTERM or SIGINT (a bad master key stops it first)."""
    settings = load_credentials_settings(env)
    keys = load_key_ring(settings.service.home, settings.secret_key, settings.previous_secret_keys)
    await run_service(build_spec(settings, keys), settings.service)
