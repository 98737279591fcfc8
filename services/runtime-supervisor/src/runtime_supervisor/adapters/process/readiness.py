"""Waiting until a started service is ready: an HTTP answer, a TCP connection or a line in its log.

Probed at once, then 5 ms later, and less often after that, up to every 100 ms by default
(DECISIONS 8): most services are ready within tens of milliseconds, and a fixed 100 ms poll added
half that to every start. Each HTTP probe takes at most 5 s. The service's own end is checked
before every probe, so a service that exits before it is ready fails at once with its exit
status and last output (reference case 57).

HTTP probes share one client per event loop, without keep-alive: building an ``httpx`` client
(its TLS context above all) cost ~20 ms per start, and a pooled connection to a service that has
since stopped is of no use.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import weakref
from collections.abc import Callable
from pathlib import Path

import httpx

from contracts.workspace_config import HttpReadiness, LogReadiness, Readiness, TcpReadiness
from runtime_supervisor.adapters.containment.netns import probe_tcp
from runtime_supervisor.adapters.process.inspect import ExitStatus, last_output

__all__ = ["NotReady", "wait_ready"]

PROBE_TIMEOUT = 5.0
FIRST_INTERVAL = 0.005
"""Seconds before the second probe; each later wait is 1.5 times the one before, up to the
readiness interval."""
_LOG_CARRY = 64 * 1024
"""Text kept from earlier reads of the log, so a match may span two reads."""
_LOG_READ = 1024 * 1024


class NotReady(Exception):
    """The service did not become ready: ``message`` says why, ``last_output`` ends its log."""

    def __init__(self, message: str, last_output: str) -> None:
        super().__init__(message)
        self.message = message
        self.last_output = last_output


class _LogScanner:
    """Follows a growing log file and searches it for a pattern."""

    def __init__(self, path: Path, pattern: str, offset: int) -> None:
        self.path = path
        try:
            self.pattern = re.compile(pattern, re.MULTILINE)
        except re.error as exc:
            raise ValueError(f"invalid log readiness pattern {pattern!r}: {exc}") from exc
        self.offset = offset
        self.carry = ""

    def matched(self) -> bool:
        try:
            with self.path.open("rb") as log:
                log.seek(self.offset)
                data = log.read(_LOG_READ)
        except OSError:
            return False
        if not data:
            return False
        self.offset += len(data)
        text = self.carry + data.decode("utf-8", errors="replace")
        if self.pattern.search(text):
            return True
        self.carry = text[-_LOG_CARRY:]
        return False


_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def _client() -> httpx.AsyncClient:
    """The running loop's probe client (made on its first HTTP probe)."""
    loop = asyncio.get_running_loop()
    client = _CLIENTS.get(loop)
    if client is None:
        # trust_env=False: a proxy from the environment must not stand between us and loopback.
        client = httpx.AsyncClient(
            trust_env=False,
            follow_redirects=False,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        _CLIENTS[loop] = client
    return client


async def _http_ok(client: httpx.AsyncClient, url: str, timeout: float) -> bool:
    try:
        response = await client.get(url, timeout=timeout)
    except httpx.HTTPError:
        return False
    return 200 <= response.status_code < 400


async def _tcp_ok(port: int, timeout: float, netns: Path | None = None) -> bool:
    if netns is not None:  # a relay on the host accepts before the service listens
        return await asyncio.to_thread(probe_tcp, netns, port, timeout=timeout)
    try:
        _reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), timeout
        )
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def _raise_if_exited(exited: Callable[[], ExitStatus | None], log_path: Path) -> None:
    status = exited()
    if status is not None:
        raise NotReady(f"service process exited before readiness ({status})", last_output(log_path))


async def wait_ready(
    readiness: Readiness | None,
    *,
    url: str | None,
    port: int | None,
    log_path: Path,
    timeout: float,
    interval: float = 0.1,
    exited: Callable[[], ExitStatus | None],
    log_offset: int = 0,
    netns: Path | None = None,
) -> None:
    """Return once the service is ready; raise :class:`NotReady` if it ends or times out first.

    Args:
        readiness: ``http`` (GET ``url`` answers 2xx/3xx), ``tcp`` (127.0.0.1:``port`` accepts a
            connection), ``log`` (its pattern appears in the log) or None (ready once spawned).
        url: The rendered readiness URL (``http``).
        port: The service's port (``tcp``).
        log_path: The service's log file (``log``, and the last output of a failure).
        timeout: Seconds until the service counts as not ready.
        interval: The most seconds between two probes (the first ones come sooner).
        exited: The service's exit status once it has ended (read from its status file), else None.
        log_offset: Where in the log this start's output begins (``log``).
        netns: The service's network namespace: ``tcp`` is probed inside it.

    Raises:
        NotReady: "service process exited before readiness (exit 3)" or "not ready after 30s".
        ValueError: ``http`` without a URL, ``tcp`` without a port, an invalid ``log`` pattern.
    """
    if readiness is None:
        return
    if isinstance(readiness, HttpReadiness) and not url:
        raise ValueError("http readiness needs a URL")
    if isinstance(readiness, TcpReadiness) and port is None:
        raise ValueError("tcp readiness needs a port")
    scanner = (
        _LogScanner(log_path, readiness.pattern, log_offset)
        if isinstance(readiness, LogReadiness)
        else None
    )
    deadline = time.monotonic() + timeout
    wait = min(FIRST_INTERVAL, interval)
    while True:
        _raise_if_exited(exited, log_path)
        left = deadline - time.monotonic()
        probe = min(PROBE_TIMEOUT, max(left, 0.05))
        if scanner is not None:
            ready = scanner.matched()
        elif url is not None and isinstance(readiness, HttpReadiness):
            ready = await _http_ok(_client(), url, probe)
        else:
            ready = await _tcp_ok(port or 0, probe, netns)
        if ready:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            _raise_if_exited(exited, log_path)
            raise NotReady(f"not ready after {timeout:g}s", last_output(log_path))
        await asyncio.sleep(min(wait, left))
        wait = min(wait * 1.5, interval)
