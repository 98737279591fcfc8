"""Settings of the git-credentials, read once at start (ARCHITECTURE §8, DECISIONS 9).

Secret material (the master keys, the server's own tokens) never shows in ``repr``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from git_credentials.adapters.masterkey import parse_master_key, parse_previous_keys
from servicekit import ServiceSettings, SettingsError
from telemetry import scrub_url_secrets

__all__ = [
    "DEFAULT_GITHUB_API_URL",
    "SERVER_TOKEN_NAMES",
    "SERVICE_NAME",
    "CredentialsSettings",
    "load_credentials_settings",
    "load_settings",
]

SERVICE_NAME = "git-credentials"
DEFAULT_GITHUB_API_URL: Final = "https://api.github.com"
SERVER_TOKEN_NAMES: Final = ("GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN")
"""The service's own environment variables the resolution chain falls back to."""


@dataclass(frozen=True, kw_only=True)
class CredentialsSettings:
    """The common service settings plus the git-credentials' own."""

    service: ServiceSettings
    gitlab_hosts: str = ""
    """``CLIPYARD_GITLAB_HOSTS``: self-managed GitLab hosts, comma separated (``host[:port]`` or
    URLs), as given; the resolution parses them."""
    ca_cert_path: str | None = None
    """``CLIPYARD_GITLAB_CA_CERT_PATH``: ``GIT_SSL_CAINFO`` for self-managed GitLab hosts only
    (blank: unset)."""
    github_api_url: str = DEFAULT_GITHUB_API_URL
    """``CLIPYARD_GITHUB_API_URL``: the GitHub REST API for pull-request lookups."""
    secret_key: bytes | None = field(default=None, repr=False)
    """``CLIPYARD_SECRET_KEY``, decoded (None: the key file ``credentials/master.key``)."""
    previous_secret_keys: tuple[bytes, ...] = field(default=(), repr=False)
    """``CLIPYARD_SECRET_KEY_PREVIOUS``, decoded: older master keys, only to rewrap at start."""
    server_env: Mapping[str, str] = field(default_factory=dict, repr=False)
    """``GITHUB_TOKEN``, ``GH_TOKEN``, ``GITLAB_TOKEN`` of the service's own environment (the
    last links of the resolution chain); only those set and not blank."""


_LOOPBACK: Final = frozenset({"127.0.0.1", "::1", "localhost"})


def _check_api_url(api_url: str) -> None:
    """An https URL, or http on loopback only (a token never crosses a network in clear)."""
    parts = urlsplit(api_url)
    shown = scrub_url_secrets(api_url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and (parts.hostname or "") in _LOOPBACK:
        return
    raise SettingsError(
        f"CLIPYARD_GITHUB_API_URL={shown!r} is not an https URL (plain http is allowed on "
        f"loopback only, so a token never travels in clear); unset it for {DEFAULT_GITHUB_API_URL}"
    )


def load_settings(env: Mapping[str, str] | None = None) -> ServiceSettings:
    """The service's common settings from ``env`` (default: the process environment)."""
    return ServiceSettings.from_env(SERVICE_NAME, env)


def load_credentials_settings(env: Mapping[str, str] | None = None) -> CredentialsSettings:
    """All of the git-credentials' settings from ``env`` (default: the process environment).

    Raises:
        SettingsError: A setting Clipyard cannot use (the message names it and the fix, never a
            key's value).
    """
    source = os.environ if env is None else env
    raw_key = source.get("CLIPYARD_SECRET_KEY", "")
    api_url = (source.get("CLIPYARD_GITHUB_API_URL") or "").strip() or DEFAULT_GITHUB_API_URL
    _check_api_url(api_url)
    return CredentialsSettings(
        service=load_settings(env),
        gitlab_hosts=source.get("CLIPYARD_GITLAB_HOSTS", "").strip(),
        ca_cert_path=(source.get("CLIPYARD_GITLAB_CA_CERT_PATH") or "").strip() or None,
        github_api_url=api_url.rstrip("/"),
        secret_key=(
            parse_master_key(raw_key, source="CLIPYARD_SECRET_KEY") if raw_key.strip() else None
        ),
        previous_secret_keys=parse_previous_keys(source.get("CLIPYARD_SECRET_KEY_PREVIOUS")),
        server_env={
            name: source[name] for name in SERVER_TOKEN_NAMES if source.get(name, "").strip()
        },
    )
