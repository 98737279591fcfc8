"""A fake of our own ``SecretLookup`` port and an audit recorder, for the resolution tests."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from git_credentials.domain.chain import SecretUnavailable
from git_credentials.usecases.memo import ResolutionMemo
from git_credentials.usecases.resolver import CredentialResolver, ResolutionRecord

__all__ = ["AuditLog", "FakeSecrets", "make_resolver", "unavailable"]


class FakeSecrets:
    """Company secrets by exact name; records every name asked, in order.

    A value that is an exception instance is raised (``SecretUnavailable``: unreadable secret).
    """

    def __init__(self, secrets: Mapping[tuple[str, str], str | Exception] | None = None) -> None:
        self.secrets = dict(secrets or {})
        self.asked: list[tuple[str, str]] = []
        self.delay = 0.0

    async def __call__(self, company_id: str, name: str) -> str | None:
        self.asked.append((company_id, name))
        if self.delay:
            await asyncio.sleep(self.delay)
        value = self.secrets.get((company_id, name))
        if isinstance(value, Exception):
            raise value
        return value

    def names(self) -> list[str]:
        """The names asked, in order (whatever the company)."""
        return [name for _company, name in self.asked]


class AuditLog:
    """Collects the resolution records (the audit events)."""

    def __init__(self) -> None:
        self.records: list[ResolutionRecord] = []

    async def __call__(self, record: ResolutionRecord) -> None:
        self.records.append(record)


def unavailable() -> SecretUnavailable:
    """The error of a secret that exists but cannot be read."""
    return SecretUnavailable("the secret's data key was destroyed")


def make_resolver(
    secrets: FakeSecrets,
    audit: AuditLog,
    *,
    server_env: Mapping[str, str] | None = None,
    gitlab_hosts: Sequence[str] = (),
    ca_cert_path: str | None = None,
    memo: ResolutionMemo | None = None,
) -> CredentialResolver:
    """A resolver over the fake secrets, recording its audit events in ``audit``."""
    return CredentialResolver(
        lookup=secrets,
        server_env=server_env or {},
        gitlab_hosts=gitlab_hosts,
        ca_cert_path=ca_cert_path,
        on_resolved=audit,
        memo=memo,
    )
