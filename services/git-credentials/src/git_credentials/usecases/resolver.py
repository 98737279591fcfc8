"""The credential resolver: host gating, the memoized chain, the audit hook and the invocation.

A URL that never gets a credential is answered without touching the secrets (reference case 5).
Otherwise the provider's chain is resolved once per ``(company, run or operation, provider)``;
each resolution that yields a token is reported exactly once to ``on_resolved`` (the audit
event), inside the shared resolution, so no token is handed out unaudited.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from contracts.credentials import CredentialSource, GitInvocation, GitProvider
from git_credentials.domain.chain import ResolvedToken, SecretLookup, resolve_token
from git_credentials.domain.hosts import classify_remote, parse_gitlab_hosts
from git_credentials.domain.invocation import build_credential, ca_env
from git_credentials.usecases.memo import ResolutionMemo

__all__ = ["CredentialResolver", "ResolutionRecord"]


@dataclass(frozen=True)
class ResolutionRecord:
    """One performed resolution that produced a token (never the token itself)."""

    company_id: str
    provider: GitProvider
    remote_host: str
    secret_name: str | None
    source: CredentialSource
    run_id: str | None
    operation_id: str | None


class CredentialResolver:
    """Answers how one git process authenticates for a remote, per run or operation."""

    def __init__(
        self,
        *,
        lookup: SecretLookup,
        server_env: Mapping[str, str],
        gitlab_hosts: Sequence[str],
        ca_cert_path: str | None,
        on_resolved: Callable[[ResolutionRecord], Awaitable[None]],
        memo: ResolutionMemo | None = None,
    ) -> None:
        """Create a resolver.

        Args:
            lookup: Reads one company secret by exact name.
            server_env: The server environment (only the token names are read).
            gitlab_hosts: The self-managed GitLab hosts (``CLIPYARD_GITLAB_HOSTS`` entries).
            ca_cert_path: ``CLIPYARD_GITLAB_CA_CERT_PATH`` (self-managed GitLab only).
            on_resolved: Records the audit event of a resolution that produced a token.
            memo: The memo (default: a new one with the default TTL and bound).
        """
        self._lookup = lookup
        self._server_env = dict(server_env)
        self._gitlab_hosts = parse_gitlab_hosts(",".join(gitlab_hosts))
        self._ca_cert_path = ca_cert_path
        self._on_resolved = on_resolved
        self._memo = memo if memo is not None else ResolutionMemo()

    async def invocation(
        self,
        *,
        company_id: str,
        remote_url: str,
        run_id: str | None,
        operation_id: str | None,
    ) -> GitInvocation:
        """How to authenticate git for ``remote_url``.

        Returns:
            Provider None and no credential for a URL that never gets one (no secret is read);
            the provider and no credential when nothing resolved; else the provider and the
            credential (``-c`` options and env for that one git process).
        """
        remote = classify_remote(remote_url, self._gitlab_hosts)
        if remote is None:
            return GitInvocation(provider=None, credential=None)
        token = await self.token_for(
            company_id=company_id,
            provider=remote.provider,
            remote_host=remote.host,
            run_id=run_id,
            operation_id=operation_id,
        )
        env = ca_env(remote, self._ca_cert_path)
        if token is None:
            return GitInvocation(provider=remote.provider, credential=None, env=env)
        credential = build_credential(remote, token, self._ca_cert_path)
        return GitInvocation(provider=remote.provider, credential=credential, env=env)

    def forget(self, company_id: str) -> int:
        """Forget the company's memoized resolutions (one of its secrets was deleted)."""
        return self._memo.forget(company_id)

    async def token_for(
        self,
        *,
        company_id: str,
        provider: GitProvider,
        remote_host: str,
        run_id: str | None,
        operation_id: str | None,
    ) -> ResolvedToken | None:
        """The memoized token of ``provider`` for a run or operation (also for PR lookups).

        Args:
            company_id: The company whose secrets are read.
            provider: ``github`` or ``gitlab``.
            remote_host: The host the token is for (recorded in the audit event).
            run_id: The run, if any (the memo key).
            operation_id: The operation, when no run is involved.

        Returns:
            The token, or None when nothing in the chain is usable.
        """

        async def resolve() -> ResolvedToken | None:
            token = await resolve_token(provider, company_id, self._lookup, self._server_env)
            if token is not None:
                await self._on_resolved(
                    ResolutionRecord(
                        company_id=company_id,
                        provider=provider,
                        remote_host=remote_host,
                        secret_name=token.secret_name,
                        source=token.source,
                        run_id=run_id,
                        operation_id=operation_id,
                    )
                )
            return token

        token, _performed = await self._memo.get(
            company_id=company_id,
            run_id=run_id,
            operation_id=operation_id,
            provider=provider,
            resolve=resolve,
        )
        return token
