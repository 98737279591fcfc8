"""Sanitized environments for the processes Clipyard spawns for workspaces (ARCHITECTURE §6).

One rule for every service that spawns them (the realizer's provision, teardown and cleanup
commands and server-side git; the supervisor's runtime services, jobs and adapters): no server
settings (``CLIPYARD_*``, ``PAPERCLIP_*``), no NATS or database URLs and credentials, no forge
tokens (``GITHUB_TOKEN``, ``GH_TOKEN``, ``GITLAB_TOKEN``, enterprise variants), no PostgreSQL
variables (``POSTGRES_*``, ``PG*``), no OTLP headers and no npm auth settings. The variables
meant for the process are added by the caller after sanitizing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final

__all__ = ["is_sensitive_name", "sanitize_env"]

_DROPPED_PREFIXES: Final = ("CLIPYARD_", "PAPERCLIP_", "NATS_", "POSTGRES_", "PG")
_DROPPED_NAMES: Final = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITLAB_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "DATABASE_URL",
        "NATS_URL",
    }
)
_DROPPED_PATTERNS: Final = (
    re.compile(r"^OTEL_EXPORTER_OTLP_(?:[A-Z]+_)?HEADERS", re.IGNORECASE),
    re.compile(r"^npm_config_.*auth", re.IGNORECASE),
    re.compile(r"(?:^|_)DATABASE_URL$", re.IGNORECASE),
    re.compile(r"(?:^|_)NATS_(?:URL|USER|PASSWORD|TOKEN|CREDS|NKEY)", re.IGNORECASE),
)


def is_sensitive_name(name: str) -> bool:
    """Tell whether an environment variable must not reach a workspace process.

    Args:
        name: The variable's name.

    Returns:
        True for server settings, NATS/database URLs and credentials, forge tokens, PostgreSQL
        variables, OTLP headers and npm auth settings.
    """
    if name.upper() in _DROPPED_NAMES:
        return True
    if name.startswith(_DROPPED_PREFIXES):
        return True
    return any(pattern.search(name) for pattern in _DROPPED_PATTERNS)


def sanitize_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default: this process's environment) without the sensitive variables.

    Args:
        env: The environment to clean.

    Returns:
        The variables that may be handed to a workspace process (``PATH``, ``HOME``, ``LANG``, ...).
    """
    source = os.environ if env is None else env
    return {name: value for name, value in source.items() if not is_sensitive_name(name)}
