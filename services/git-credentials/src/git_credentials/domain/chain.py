"""The resolution chain of one provider (DECISIONS 9, reference §8.2): company secrets by exact
name in order, then the server environment, then nothing.

Values are trimmed; a secret that is empty or cannot be read (:class:`SecretUnavailable`) is
skipped and the chain continues. GitHub names are never probed for GitLab and vice versa.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from contracts.credentials import CredentialSource, GitProvider

log = logging.getLogger(__name__)

__all__ = [
    "GITHUB_SECRET_NAMES",
    "GITLAB_SECRET_NAMES",
    "SERVER_ENV_NAMES",
    "ResolvedToken",
    "SecretLookup",
    "SecretUnavailable",
    "resolve_token",
]

GITHUB_SECRET_NAMES: tuple[str, ...] = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "CLIPYARD_GITHUB_TOKEN",
    "PAPERCLIP_GITHUB_TOKEN",
)
GITLAB_SECRET_NAMES: tuple[str, ...] = ("GITLAB_TOKEN", "CLIPYARD_GITLAB_TOKEN")
SERVER_ENV_NAMES: Mapping[GitProvider, tuple[str, ...]] = {
    "github": ("GITHUB_TOKEN", "GH_TOKEN"),
    "gitlab": ("GITLAB_TOKEN",),
}
_SECRET_NAMES: Mapping[GitProvider, tuple[str, ...]] = {
    "github": GITHUB_SECRET_NAMES,
    "gitlab": GITLAB_SECRET_NAMES,
}


class SecretUnavailable(Exception):
    """A secret exists but cannot be read (its key destroyed, decryption failed).

    The message must never hold the value.
    """


class SecretLookup(Protocol):
    """Reads one company secret by its exact name."""

    async def __call__(self, company_id: str, name: str) -> str | None:
        """The current value of the secret ``name`` of ``company_id``.

        Returns:
            The value, or None when the company has no secret of exactly that name.

        Raises:
            SecretUnavailable: The secret exists but cannot be read.
        """
        ...


@dataclass(frozen=True)
class ResolvedToken:
    """A token and where it came from (``repr`` never shows the token)."""

    token: str = field(repr=False)
    source: CredentialSource
    secret_name: str | None
    """None when the token came from the server environment."""
    provider: GitProvider


async def resolve_token(
    provider: GitProvider,
    company_id: str,
    lookup: SecretLookup,
    server_env: Mapping[str, str],
) -> ResolvedToken | None:
    """The first usable token of ``provider``'s chain for ``company_id``.

    Args:
        provider: ``github`` or ``gitlab``; only that provider's names are probed.
        company_id: The company whose secrets are looked up.
        lookup: Reads one secret by exact name.
        server_env: The server's environment (``GITHUB_TOKEN``, ``GH_TOKEN`` / ``GITLAB_TOKEN``).

    Returns:
        The token with its source and secret name, or None when nothing in the chain is usable.
    """
    for name in _SECRET_NAMES[provider]:
        try:
            value = await lookup(company_id, name)
        except SecretUnavailable:
            # Said out loud: otherwise a master-key mix-up reads as "no credential configured".
            log.warning(
                "company secret %s of company %s cannot be read (a wrong master key, or its data "
                "key was destroyed); skipped, the chain goes on",
                name,
                company_id,
            )
            continue
        token = (value or "").strip()
        if token:
            return ResolvedToken(token, "company_secret", name, provider)
    for name in SERVER_ENV_NAMES[provider]:
        token = server_env.get(name, "").strip()
        if token:
            return ResolvedToken(token, "server_env", None, provider)
    return None
