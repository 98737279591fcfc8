"""Settings of the runtime-supervisor, read once at start (ARCHITECTURE §8)."""

from __future__ import annotations

from collections.abc import Mapping

from servicekit import ServiceSettings

__all__ = ["SERVICE_NAME", "load_settings"]

SERVICE_NAME = "runtime-supervisor"


def load_settings(env: Mapping[str, str] | None = None) -> ServiceSettings:
    """The service's settings from ``env`` (default: the process environment)."""
    return ServiceSettings.from_env(SERVICE_NAME, env)
