"""Small probes of the local stack: where it listens, free ports, HTTP answers, exit codes."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from clipyard_cli.home import resolve_home
from clipyard_cli.stack import StackError, resolve_service
from contracts.subjects import SERVICE_NAMES

__all__ = ["StackSettings", "describe_exit", "http_get", "reachable", "require_free_port"]


@dataclass(frozen=True, kw_only=True)
class StackSettings:
    """Where the local stack lives and listens."""

    home: Path
    nats_host: str = "127.0.0.1"
    nats_port: int = 4222
    http_host: str = "127.0.0.1"
    http_port: int = 8080
    node_id: str = "local"
    ready_timeout: float = 60.0
    stop_all_timeout: float = 30.0
    skip: frozenset[str] = frozenset()
    """Service names not to start (run one of them yourself with ``clipyard run``)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, skip: Iterable[str] = ()) -> StackSettings:
        """Read ``CLIPYARD_HOME``, ``CLIPYARD_NATS_URL``, ``CLIPYARD_HTTP_HOST/PORT`` and
        ``CLIPYARD_NODE_ID`` (ARCHITECTURE §8); ``CLIPYARD_READY_TIMEOUT`` bounds the start."""
        url = urlsplit(env.get("CLIPYARD_NATS_URL") or "nats://127.0.0.1:4222")
        return cls(
            home=resolve_home(env),
            nats_host=url.hostname or "127.0.0.1",
            nats_port=url.port or 4222,
            http_host=env.get("CLIPYARD_HTTP_HOST") or "127.0.0.1",
            http_port=int(env.get("CLIPYARD_HTTP_PORT") or "8080"),
            node_id=env.get("CLIPYARD_NODE_ID") or "local",
            ready_timeout=float(env.get("CLIPYARD_READY_TIMEOUT") or "60"),
            skip=frozenset(SERVICE_NAMES[resolve_service(name)] for name in skip),
        )

    @property
    def nats_url(self) -> str:
        """The URL clients use (a wildcard listen address is reached on loopback)."""
        return f"nats://{reachable(self.nats_host)}:{self.nats_port}"

    @property
    def api_url(self) -> str:
        """The HTTP API's base URL."""
        return f"http://{reachable(self.http_host)}:{self.http_port}/api"


def reachable(host: str) -> str:
    """The address clients use for a listen address (a wildcard is reached on loopback)."""
    return "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host


def describe_exit(code: int | None) -> str:
    """A process's return code in words (``exit code 0``, ``signal 15``)."""
    if code is None:
        return "still running"
    return f"signal {-code}" if code < 0 else f"exit code {code}"


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
