"""Environments of runtime services and jobs (ARCHITECTURE §6; reference §6.2 step 5, case 42).

No server settings (``CLIPYARD_*``, ``PAPERCLIP_*``), no NATS or database URLs and credentials, no
forge tokens (``GITHUB_TOKEN``, ``GH_TOKEN``, ``GITLAB_TOKEN``), no PostgreSQL variables
(``POSTGRES_*``, ``PG*``), no OTLP headers and no npm auth settings reach a service or a job; then
the service's own variables are added: its port, ``HOST=127.0.0.1`` (DECISIONS 8) and its rendered
``env``. The rule is :mod:`servicekit.childenv`, shared with the workspace-realizer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from servicekit.childenv import is_sensitive_name, sanitize_env

__all__ = ["SERVICE_HOST", "is_sensitive_name", "sanitized_env", "service_env"]

SERVICE_HOST: Final = "127.0.0.1"


def sanitized_env(base: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``base`` without the sensitive variables.

    Args:
        base: The environment to clean (usually the supervisor's own).

    Returns:
        The variables a service or job may see (``PATH``, ``HOME``, ``LANG``, ``HOST``, ...).
    """
    return sanitize_env(base)


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
