"""Sanitized environments for the processes Clipyard spawns for workspaces (ARCHITECTURE §6).

No server settings (``CLIPYARD_*``, ``PAPERCLIP_*``), no NATS or database URLs and credentials, no
forge tokens, no PostgreSQL variables, no OTLP headers and no npm auth settings reach a provision,
teardown or cleanup command, nor a server-side git process (whose credential, if any, is added back
explicitly by its :class:`~workspace_realizer.adapters.ports.GitInvocation`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["is_sensitive_name", "sanitize_env", "workspace_env"]

_DROPPED_PREFIXES = ("CLIPYARD_", "PAPERCLIP_", "NATS_", "POSTGRES_", "PG")
_DROPPED_NAMES = frozenset(
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
_DROPPED_PATTERNS = (
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
        True for the server's settings, NATS/database URLs and credentials, forge tokens,
        PostgreSQL variables, OTLP headers and npm auth settings.
    """
    if name in _DROPPED_NAMES or name.upper() in _DROPPED_NAMES:
        return True
    if any(name.startswith(prefix) for prefix in _DROPPED_PREFIXES):
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


def workspace_env(
    added: Mapping[str, str], *, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a workspace command: the sanitized base, then ``added`` on top.

    Args:
        added: Variables meant for the command (``CLIPYARD_WORKSPACE_*`` and the like); they are
            added after sanitizing, so they are kept even when their names look like settings.
        base: The base environment (default: this process's environment).

    Returns:
        The complete environment.
    """
    env = sanitize_env(base)
    env.update(added)
    return env
