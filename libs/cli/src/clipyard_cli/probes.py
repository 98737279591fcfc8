"""Small probes of the local stack: where it listens, free ports, HTTP answers, exit codes and
durations in words."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clipyard_cli.home import resolve_home
from clipyard_cli.natsmode import nats_external, nats_urls
from clipyard_cli.stack import StackError, resolve_service
from contracts.subjects import SERVICE_NAMES
from natsbus.urls import NatsUrl
from servicekit import settings as service_settings
from servicekit.settings import Rotation, env_seconds

__all__ = [
    "StackSettings",
    "describe_exit",
    "format_duration",
    "http_get",
    "port_answers",
    "reachable",
    "require_free_port",
]


@dataclass(frozen=True, kw_only=True)
class StackSettings:
    """Where the local stack lives and listens."""

    home: Path
    nats_host: str = "127.0.0.1"
    nats_port: int = 4222
    nats_servers: tuple[str, ...] = ()
    """``CLIPYARD_NATS_URL``'s servers (the first one's host and port are ``nats_host`` and
    ``nats_port``, where ``clipyard up`` starts its own)."""
    nats_external: bool = False
    """Whether they are external ones (:mod:`clipyard_cli.natsmode`): ``up`` starts no NATS."""
    event_replicas: int = 1
    """``CLIPYARD_EVENT_REPLICAS``: the replicas of ``WS_EVENTS`` each service is given (1 on the
    single nats-server ``up`` starts; more only on an external cluster)."""
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    node_id: str = "local"
    ready_timeout: float = 60.0
    stop_all_timeout: float = 30.0
    skip: frozenset[str] = frozenset()
    """Service names not to start (run one of them yourself with ``clipyard run``)."""
    log_rotation: Rotation = field(default_factory=lambda: service_settings.log_rotation({}))
    """``CLIPYARD_LOG_MAX_BYTES``, ``CLIPYARD_LOG_BACKUPS``: how the processes' logs rotate (each
    process reads them itself; read here so that a bad value stops ``up`` before anything runs)."""
    spans_rotation: Rotation = field(default_factory=lambda: service_settings.spans_rotation({}))
    """``CLIPYARD_SPANS_MAX_BYTES``, ``CLIPYARD_SPANS_BACKUPS``: how ``telemetry/spans.jsonl``
    rotates (read by the services; checked here too)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, skip: Iterable[str] = ()) -> StackSettings:
        """Read ``CLIPYARD_HOME``, ``CLIPYARD_NATS_URL``, ``CLIPYARD_NATS_EXTERNAL``,
        ``CLIPYARD_HTTP_HOST/PORT`` and ``CLIPYARD_NODE_ID`` (ARCHITECTURE §8);
        ``CLIPYARD_READY_TIMEOUT`` bounds the start;
        ``CLIPYARD_LOG_*``, ``CLIPYARD_SPANS_*`` and ``CLIPYARD_EVENT_REPLICAS`` are checked.

        Raises:
            ValueError: A variable holds an unusable value; the message names it and the fix.
        """
        servers = nats_urls(env)
        return cls(
            home=resolve_home(env),
            nats_host=servers[0].host,
            nats_port=servers[0].port,
            nats_servers=tuple(one.url for one in servers),
            nats_external=nats_external(env, servers),
            event_replicas=_event_replicas(env, servers),
            http_host=env.get("CLIPYARD_HTTP_HOST") or "127.0.0.1",
            http_port=_port(env, "CLIPYARD_HTTP_PORT", 8080),
            node_id=env.get("CLIPYARD_NODE_ID") or "local",
            ready_timeout=env_seconds(env, "CLIPYARD_READY_TIMEOUT", 60.0),
            skip=frozenset(SERVICE_NAMES[resolve_service(name)] for name in skip),
            log_rotation=service_settings.log_rotation(env),
            spans_rotation=service_settings.spans_rotation(env),
        )

    @property
    def nats_url(self) -> str:
        """The URL clients use: the external servers separated by commas, else the one ``up``
        starts (a wildcard listen address is reached on loopback)."""
        if self.nats_external:
            return ",".join(self.nats_servers)
        return f"nats://{reachable(self.nats_host)}:{self.nats_port}"

    @property
    def api_url(self) -> str:
        """The HTTP API's base URL."""
        return f"http://{reachable(self.http_host)}:{self.http_port}/api"


def _event_replicas(env: Mapping[str, str], servers: Sequence[NatsUrl]) -> int:
    """``CLIPYARD_EVENT_REPLICAS`` (1), refused above 1 when ``up`` starts its own single server.

    Raises:
        ValueError: Not a whole number 1 to 5, or more than 1 without an external cluster.
    """
    replicas = service_settings.event_replicas(env)
    if replicas > 1 and not nats_external(env, servers):
        raise ValueError(
            f"CLIPYARD_EVENT_REPLICAS={replicas} needs a NATS cluster, and `clipyard up` starts "
            "a single nats-server: unset it (1 replica), or point CLIPYARD_NATS_URL at the "
            "cluster's servers"
        )
    return replicas


def _port(env: Mapping[str, str], name: str, default: int) -> int:
    """A TCP port from ``env[name]`` (``default`` when unset or empty)."""
    raw = env.get(name) or ""
    if not raw:
        return default
    port = int(raw) if raw.strip().isascii() and raw.strip().isdigit() else 0
    if not 0 < port < 65536:
        raise ValueError(
            f"{name}={raw!r} is not a TCP port: set it to 1-65535 (or unset it for {default})"
        )
    return port


def reachable(host: str) -> str:
    """The address clients use for a listen address (a wildcard is reached on loopback)."""
    return "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host


def describe_exit(code: int | None) -> str:
    """A process's return code in words (``exit code 0``, ``signal 15``)."""
    if code is None:
        return "still running"
    return f"signal {-code}" if code < 0 else f"exit code {code}"


def format_duration(seconds: float) -> str:
    """``4.2s``, ``42s``, ``3m05s``, ``2h07m``: a duration as people read it, in one word."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{int(seconds)}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


async def port_answers(host: str, port: int) -> bool:
    """Whether something accepts a TCP connection on ``host:port``."""
    try:
        _, writer = await asyncio.open_connection(host, port)
    except OSError:
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def require_free_port(host: str, port: int, setting: str) -> None:
    """Raise :class:`StackError` naming ``setting`` when ``host:port`` is taken."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise StackError(
                f"cannot use {host}:{port} ({exc.strerror}): is another stack running? "
                f"Stop it (`clipyard down`) or choose another port with {setting}"
            ) from None


def http_get(url: str) -> tuple[int, str]:
    """The status and the start of the body of ``GET url`` (status 0 when nothing answers)."""
    try:
        with urllib.request.urlopen(url, timeout=2.0) as response:
            return response.status, response.read(2000).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(2000).decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        return 0, str(exc)
