"""The gateway's settings: the shared service settings plus what only the HTTP edge needs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from api_gateway.domain import hash_secret
from servicekit import ServiceSettings
from servicekit.keys import ADMIN_KEY_FILE, ensure_admin_key_file
from servicekit.settings import env_seconds

__all__ = ["ADMIN_KEY_FILE", "SERVICE_NAME", "SERVICE_VERSION", "GatewaySettings"]

SERVICE_NAME: Final = "api-gateway"
SERVICE_VERSION: Final = "0.1.0"


@dataclass(frozen=True, kw_only=True)
class GatewaySettings:
    """One frozen settings object for the gateway, every field with a default for ``just up``."""

    service: ServiceSettings
    """The settings every service reads (home, NATS, store, HTTP host/port, admin key)."""
    max_body_bytes: int = 256 * 1024
    """Largest request body accepted; bigger bodies answer 413 (API.md)."""
    request_timeout: float = 110.0
    """``CLIPYARD_REQUEST_TIMEOUT``: seconds a bus request may take before the gateway answers 504."""
    query_timeout: float = 10.0
    """``CLIPYARD_QUERY_TIMEOUT``: seconds a quick query (an operation's state) may take."""
    health_timeout: float = 1.0
    """``CLIPYARD_HEALTH_TIMEOUT``: seconds each service has to answer the health ping."""
    health_fresh_for: float = 0.5
    """``CLIPYARD_HEALTH_FRESH_FOR``: seconds a health answer is reused after its round of pings
    started (one round runs at a time; requests during it share its answer)."""
    session_ttl: float = 12 * 3600.0
    """``CLIPYARD_SESSION_TTL``: seconds an operator-page session lasts."""
    session_cookie_secure: bool = False
    """``CLIPYARD_SESSION_COOKIE_SECURE``: mark the session cookie ``Secure`` (behind HTTPS)."""
    sse_keepalive: float = 15.0
    """``CLIPYARD_SSE_KEEPALIVE``: most seconds an event stream goes without a write to its client
    (then a keep-alive comment is sent)."""
    sse_auth_recheck: float = 1.0
    """Seconds between checks that an open event stream's key or session still works (revoked,
    ended or expired: the stream ends). At most 1 s (ARCHITECTURE §5)."""
    shutdown_grace: float = 1.0
    """Seconds uvicorn waits for open HTTP requests on shutdown (the whole stop budget is 5 s)."""
    admin_key_hash: str | None = field(default=None, repr=False)
    """SHA-256 of the admin key, filled in from ``service.admin_key``; only the hash is kept."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewaySettings:
        """Read the gateway settings from ``env`` (default: the process environment).

        Args:
            env: The environment to read.

        Returns:
            The settings.

        Raises:
            SettingsError: A variable holds a value the gateway cannot use.
        """
        env = os.environ if env is None else env
        service = ServiceSettings.from_env(SERVICE_NAME, env)
        if service.admin_key is None:
            # The same file `clipyard up` reads and prints, so either may create it first.
            service = replace(service, admin_key=ensure_admin_key_file(service.home))
        return cls.build(
            service,
            request_timeout=env_seconds(env, "CLIPYARD_REQUEST_TIMEOUT", 110.0),
            query_timeout=env_seconds(env, "CLIPYARD_QUERY_TIMEOUT", 10.0),
            health_timeout=env_seconds(env, "CLIPYARD_HEALTH_TIMEOUT", 1.0),
            health_fresh_for=env_seconds(env, "CLIPYARD_HEALTH_FRESH_FOR", 0.5),
            session_ttl=env_seconds(env, "CLIPYARD_SESSION_TTL", 12 * 3600.0),
            session_cookie_secure=env.get("CLIPYARD_SESSION_COOKIE_SECURE", "").lower()
            in ("1", "true", "yes"),
            sse_keepalive=env_seconds(env, "CLIPYARD_SSE_KEEPALIVE", 15.0),
        )

    @classmethod
    def build(cls, service: ServiceSettings, **overrides: object) -> GatewaySettings:
        """Gateway settings around ``service``, hashing its admin key.

        Args:
            service: The shared service settings.
            **overrides: Gateway fields to set (tests use short timeouts).

        Returns:
            The settings.
        """
        admin_hash = hash_secret(service.admin_key) if service.admin_key else None
        return cls(service=service, admin_key_hash=admin_hash, **overrides)  # type: ignore[arg-type]
