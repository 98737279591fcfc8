"""Environments of runtime services and jobs (ARCHITECTURE §6; reference §6.2 step 5, case 42).

No server settings (``CLIPYARD_*``, ``PAPERCLIP_*``), no NATS or database URLs and credentials, no
forge tokens (``GITHUB_TOKEN``, ``GH_TOKEN``, ``GITLAB_TOKEN``), no PostgreSQL variables
(``POSTGRES_*``, ``PG*``), no OTLP headers and no npm auth settings reach a service or a job; then
the service's own variables are added: its port, ``HOST=127.0.0.1`` (DECISIONS 8) and its rendered
``env``. The rule is the workspace-realizer's (``workspace_realizer.adapters.environment``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

__all__ = ["SERVICE_HOST", "is_sensitive_name", "sanitized_env", "service_env"]

SERVICE_HOST: Final = "127.0.0.1"

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
    """Tell whether an environment variable must not reach a service or a job.

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


def sanitized_env(base: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``base`` without the sensitive variables.

    Args:
        base: The environment to clean (usually the supervisor's own).

    Returns:
        The variables a service or job may see (``PATH``, ``HOME``, ``LANG``, ``HOST``, ...).
    """
    return {name: value for name, value in base.items() if not is_sensitive_name(name)}


def service_env(
    base: Mapping[str, str],
    *,
    port: int | None,
    port_env_key: str | None,
    rendered_env: Mapping[str, str],
) -> dict[str, str]:
    """The environment of a runtime service or job.

    Args:
        base: The supervisor's environment (sanitized here).
        port: The service's port, if it has one.
        port_env_key: The variable receiving the port (default ``PORT``).
        rendered_env: The command's ``env`` with its templates rendered; added last, so it
            may override ``HOST`` or the port variable.

    Returns:
        The sanitized base, the port variable, ``HOST=127.0.0.1``, then ``rendered_env``.
    """
    env = sanitized_env(base)
    if port is not None:
        env[port_env_key or "PORT"] = str(port)
    env["HOST"] = SERVICE_HOST
    env.update(rendered_env)
    return env
