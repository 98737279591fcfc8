"""Settings of the runtime-supervisor, read once at start (ARCHITECTURE §8)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runtime_supervisor.adapters.process import parse_port_range
from servicekit import ServiceSettings, SettingsError
from servicekit.settings import env_count, env_seconds

__all__ = ["SERVICE_NAME", "SupervisorSettings", "load_settings", "load_supervisor_settings"]

SERVICE_NAME = "runtime-supervisor"


@dataclass(frozen=True, kw_only=True)
class SupervisorSettings:
    """The common service settings plus the supervisor's own."""

    service: ServiceSettings
    port_range: tuple[int, int] = (41000, 41999)
    """``CLIPYARD_PORT_RANGE`` (``low-high``): where automatic service ports come from."""
    stop_grace: float = 10.0
    """``CLIPYARD_RUNTIME_STOP_GRACE``: seconds between SIGTERM and SIGKILL of a stop."""
    ready_timeout: float = 30.0
    """``CLIPYARD_RUNTIME_READY_TIMEOUT``: seconds a start waits for readiness (a service's own
    ``readiness.timeoutSec`` wins)."""
    job_timeout: float = 600.0
    """``CLIPYARD_JOB_TIMEOUT``: seconds a job or the runtime provision command may run (a job's
    own ``timeoutSec`` wins)."""
    slots: int = 4
    """``CLIPYARD_SLOTS``: size of the ``local_stdio`` adapter slot pool."""
    slot_grant_ttl: float = 120.0
    """``CLIPYARD_SLOT_GRANT_TTL``: seconds a granted slot waits for its launch before it is
    freed."""
    run_log_max_bytes: int = 64 * 1024 * 1024
    """``CLIPYARD_RUN_LOG_MAX_BYTES``: the most an adapter's ``run.log`` holds (64 MiB); the
    rest of its output is read and dropped, and the truncation noted."""

    api_url: str | None = None
    """``CLIPYARD_API_URL`` (else ``http://<CLIPYARD_HTTP_HOST>:<CLIPYARD_HTTP_PORT>``): the API
    as contained processes reach it; a loopback address is relayed into every namespace."""
    sandbox_paths: tuple[Path, ...] = ()
    """``CLIPYARD_SANDBOX_PATHS`` (``:``-separated absolute folders): toolchains shown read-only
    in every sandbox (a language runtime outside ``/usr``); none may hold ``$CLIPYARD_HOME`` or
    lie inside it."""
    egress_host_networks: str = ""
    """``CLIPYARD_EGRESS_HOST_NETWORKS`` (comma list of IPv4 networks): the host's own
    addresses an egress allowlist may name (default none: loopback, link-local and the host's
    interfaces are never reached from a namespace)."""

    @property
    def home(self) -> Path:
        """``$CLIPYARD_HOME``."""
        return self.service.home

    def run_dir(self, service_id: str) -> Path:
        """Where the wrapper of one service instance writes: ``$CLIPYARD_HOME/runtime/<id>``."""
        return self.service.home / "runtime" / service_id

    def slot_run_dir(self, run_id: str) -> Path:
        """Where a run's adapter log and scratch folder live: ``$CLIPYARD_HOME/runs/<runId>``."""
        return self.service.home / "runs" / run_id


def load_settings(env: Mapping[str, str] | None = None) -> ServiceSettings:
    """The service's settings from ``env`` (default: the process environment)."""
    return ServiceSettings.from_env(SERVICE_NAME, env)


def load_supervisor_settings(env: Mapping[str, str] | None = None) -> SupervisorSettings:
    """All of the supervisor's settings from ``env`` (default: the process environment).

    Raises:
        SettingsError: A value Clipyard cannot use, naming the variable.
    """
    source = os.environ if env is None else env
    raw_range = source.get("CLIPYARD_PORT_RANGE") or "41000-41999"
    try:
        port_range = parse_port_range(raw_range)
    except ValueError as exc:
        raise SettingsError(f"CLIPYARD_PORT_RANGE: {exc}") from None
    service = load_settings(env)
    return SupervisorSettings(
        service=service,
        api_url=(source.get("CLIPYARD_API_URL") or "").strip().rstrip("/")
        or f"http://{service.http_host}:{service.http_port}",
        sandbox_paths=_sandbox_paths(source.get("CLIPYARD_SANDBOX_PATHS", ""), service.home),
        egress_host_networks=_networks(source.get("CLIPYARD_EGRESS_HOST_NETWORKS", "")),
        port_range=port_range,
        stop_grace=env_seconds(source, "CLIPYARD_RUNTIME_STOP_GRACE", 10.0),
        ready_timeout=env_seconds(source, "CLIPYARD_RUNTIME_READY_TIMEOUT", 30.0),
        job_timeout=env_seconds(source, "CLIPYARD_JOB_TIMEOUT", 600.0),
        slots=env_count(source, "CLIPYARD_SLOTS", 4),
        slot_grant_ttl=env_seconds(source, "CLIPYARD_SLOT_GRANT_TTL", 120.0),
        run_log_max_bytes=env_count(source, "CLIPYARD_RUN_LOG_MAX_BYTES", 64 * 1024 * 1024),
    )


def _networks(raw: str) -> str:
    found: list[str] = []
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        try:
            found.append(str(ipaddress.IPv4Network(part, strict=False)))
        except ValueError:
            raise SettingsError(
                f"CLIPYARD_EGRESS_HOST_NETWORKS: {part!r} is not an IPv4 network (such as "
                "127.0.8.0/24)."
            ) from None
    return ",".join(found)


def _sandbox_paths(raw: str, home: Path) -> tuple[Path, ...]:
    found: list[Path] = []
    home_text = str(home.resolve()).rstrip("/") + "/"
    for part in raw.split(":"):
        if not part:
            continue
        path = Path(part)
        if not path.is_absolute() or not path.is_dir():
            raise SettingsError(f"CLIPYARD_SANDBOX_PATHS: {part!r} is not an absolute folder.")
        text = str(path.resolve()).rstrip("/") + "/"
        if text.startswith(home_text) or home_text.startswith(text):
            raise SettingsError(
                f"CLIPYARD_SANDBOX_PATHS: {part!r} holds or lies in CLIPYARD_HOME; a sandbox "
                "never sees the home. List only toolchain folders."
            )
        found.append(path.resolve())
    return tuple(found)
