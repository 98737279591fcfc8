"""Composition root and lifecycle of the git-credentials."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from git_credentials import __version__
from git_credentials.adapters.crypto import KeyRing
from git_credentials.adapters.github import GitHubPullRequests
from git_credentials.adapters.masterkey import load_key_ring
from git_credentials.adapters.sealing import SecretSealer
from git_credentials.adapters.vault import open_vault
from git_credentials.application import GitCredentialsApplication
from git_credentials.domain import VaultKeyMismatchError
from git_credentials.endpoints.common import Endpoints
from git_credentials.endpoints.credentials import CredentialEndpoints
from git_credentials.endpoints.secrets import SecretEndpoints
from git_credentials.publishing import to_contract
from git_credentials.settings import (
    SERVICE_NAME,
    CredentialsSettings,
    load_credentials_settings,
)
from git_credentials.usecases.resolver import CredentialResolver
from servicekit import ServiceRuntime, ServiceSpec, run_service
from servicekit.routes import mount

__all__ = ["build_spec", "credential_endpoints", "main", "make_register"]

Register = Callable[[ServiceRuntime], Awaitable[None]]


def credential_endpoints(e: Endpoints) -> CredentialEndpoints:
    """The git-invocation and pull-request endpoints with their resolver (secrets read and
    resolutions saved through ``e``) and GitHub's client (closed with the service)."""
    settings = e.settings
    resolver = CredentialResolver(
        lookup=e.secret_value,
        server_env=settings.server_env,
        gitlab_hosts=[settings.gitlab_hosts] if settings.gitlab_hosts else [],
        ca_cert_path=settings.ca_cert_path,
        on_resolved=e.audit,
    )
    github = GitHubPullRequests(api_url=settings.github_api_url)
    e.runtime.exit_stack.push_async_callback(github.aclose)
    return CredentialEndpoints(resolver, github, settings.github_api_url)


def make_register(settings: CredentialsSettings, keys: KeyRing) -> Register:
    """The ``register`` hook: open the key vault (rewrap, destroy deleted secrets' keys), then
    add the endpoints. A replica whose keys do not open the vault's rows refuses to start while
    other replicas run (:class:`VaultKeyMismatchError`)."""

    async def register(runtime: ServiceRuntime) -> None:
        app: GitCredentialsApplication = runtime.app  # type: ignore[assignment]
        vault = await runtime.store(open_vault, settings.service.store)
        runtime.exit_stack.push_async_callback(runtime.store, vault.close)
        sealer = SecretSealer(vault, keys)
        if await runtime.instances.live() - {runtime.settings.instance_id}:
            # Beside running replicas: look first, change nothing. Keys that do not open the
            # vault would seal new secrets under a key the others cannot open: refuse. Rows of
            # older keys are left to a start with no replica running (rotate every replica at
            # once: docs/scale-out.md), or the running ones would lose them.
            seen = await runtime.store(sealer.rewrap, dry_run=True)
            if seen.unreadable:
                raise VaultKeyMismatchError(seen.unreadable)
            await runtime.store(app.open_vault, sealer, seen=seen)
        else:
            await runtime.store(app.open_vault, sealer)
        e = Endpoints(runtime, app, settings)
        credentials = credential_endpoints(e)
        secrets = SecretEndpoints(e, on_deleted=credentials.resolver.forget)
        await mount(runtime.service, credentials, secrets)

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
