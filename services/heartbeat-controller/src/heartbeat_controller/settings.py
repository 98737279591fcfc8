"""Settings of the heartbeat-controller, read once at start (ARCHITECTURE §8)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from servicekit import ServiceSettings, SettingsError
from servicekit.settings import env_seconds

__all__ = ["SERVICE_NAME", "ControllerSettings", "load_controller_settings", "load_settings"]

SERVICE_NAME = "heartbeat-controller"


@dataclass(frozen=True, kw_only=True)
class ControllerSettings:
    """The common service settings plus the controller's own."""

    service: ServiceSettings
    api_url: str
    """``CLIPYARD_API_URL`` as adapters see it; else ``http://<CLIPYARD_HTTP_HOST>:<CLIPYARD_HTTP_PORT>``."""
    kill_grace: float = 15.0
    """``CLIPYARD_RUN_KILL_GRACE``: seconds after an adapter's deadline before the controller's
    own backstop kills it (and ends the run ``timed_out``)."""
    end_wait: float = 10.0
    """``CLIPYARD_RUN_END_WAIT``: seconds to wait for the adapter's end after a kill."""
    slot_retry_max: float = 5.0
    """``CLIPYARD_SLOT_RETRY_MAX``: the longest wait between slot requests while the pool is full."""
    tick: float = 1.0
    """``CLIPYARD_DISPATCH_TICK``: seconds between the dispatcher's periodic passes."""
    prepare_timeout: float = 1800.0
    """``CLIPYARD_RUN_PREPARE_TIMEOUT``: seconds a run may spend before its adapter is launched
    (workspace, services, workspace lease, slot, token); past it the run ends ``failed``."""


def load_settings(env: Mapping[str, str] | None = None) -> ServiceSettings:
    """The service's settings from ``env`` (default: the process environment)."""
    return ServiceSettings.from_env(SERVICE_NAME, env)


def load_controller_settings(env: Mapping[str, str] | None = None) -> ControllerSettings:
    """All of the controller's settings from ``env`` (default: the process environment).

    Raises:
        SettingsError: A value Clipyard cannot use, naming the variable.
    """
    source = os.environ if env is None else env
    service = load_settings(env)
    api_url = (source.get("CLIPYARD_API_URL") or "").strip()
    if not api_url:
        api_url = f"http://{service.http_host}:{service.http_port}"
    elif not api_url.startswith(("http://", "https://")):
        raise SettingsError(f"CLIPYARD_API_URL={api_url!r} is not an http(s) URL")
    return ControllerSettings(
        service=service,
        api_url=api_url.rstrip("/"),
        kill_grace=env_seconds(source, "CLIPYARD_RUN_KILL_GRACE", 15.0),
        end_wait=env_seconds(source, "CLIPYARD_RUN_END_WAIT", 10.0),
        slot_retry_max=env_seconds(source, "CLIPYARD_SLOT_RETRY_MAX", 5.0),
        tick=env_seconds(source, "CLIPYARD_DISPATCH_TICK", 1.0),
        prepare_timeout=env_seconds(source, "CLIPYARD_RUN_PREPARE_TIMEOUT", 1800.0),
    )
