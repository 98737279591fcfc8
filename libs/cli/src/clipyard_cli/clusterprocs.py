"""Processes and ports of ``clipyard cluster up``: how its children are started and stopped, and
which ports it listens on.

Every child (nats-server nodes, PostgreSQL, service replicas) runs in a session of its own (so
Ctrl-C at the terminal reaches ``clipyard cluster up`` only), writes to ``logs/<name>.log``
(named in ``CLIPYARD_LOG_FILE`` too: a service takes the file over and rotates it), and is
signalled by Linux when the thread that started it ends (``PR_SET_PDEATHSIG``): a
``clipyard cluster up``, or a test process, killed outright leaves nothing running. That signal
is tied to the starting *thread*, so children are started on the caller's thread (the event
loop's), never in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypedDict

from clipyard_cli.home import logs_dir
from clipyard_cli.stack import ManagedProcess, StackError

__all__ = [
    "ClusterPorts",
    "RunAs",
    "all_or_none",
    "parent_death_signal",
    "spawn_child",
    "stop_child",
]

STOP_TIMEOUT: Final = 5.0
_PR_SET_PDEATHSIG: Final = 1
DEFAULT_HTTP_PORT: Final = 8180
"""The first gateway's port (the second listens on the next); ``clipyard up`` uses 8080."""
DEFAULT_NATS_PORT: Final = 4322
"""The first NATS node's client port (``clipyard up``'s nats-server uses 4222)."""
ROUTE_OFFSET: Final = 10
MONITOR_OFFSET: Final = 20


class RunAs(TypedDict, total=False):
    """The ``subprocess.Popen`` arguments that run a child as another user."""

    user: str
    group: str
    extra_groups: list[str]


async def all_or_none(work: list[Coroutine[Any, Any, None]]) -> None:
    """Run ``work`` together; when one fails, cancel the others (so nothing starts after the
    failure, while the caller cleans up) and raise its error."""
    tasks = [asyncio.ensure_future(one) for one in work]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in done:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            raise error


def parent_death_signal(sig: signal.Signals) -> Callable[[], None]:
    """A ``preexec_fn`` asking Linux to send ``sig`` to the child when the starting thread ends.

    Off the main thread it does nothing: the signal would come when that worker thread ends.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return lambda: None

    def set_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

    return set_signal


def spawn_child(
    name: str,
    argv: list[str],
    env: Mapping[str, str],
    home: Path,
    *,
    death_signal: signal.Signals = signal.SIGTERM,
    run_as: RunAs | None = None,
    cwd: Path | None = None,
) -> ManagedProcess:
    """Start ``argv`` in its own session, its output appended to ``logs/<name>.log``.

    Args:
        name: The process name (``api-gateway-2``, ``nats-1``, ``postgres``): its log's name.
        argv: The command.
        env: Its whole environment (``CLIPYARD_LOG_FILE`` is added).
        home: ``CLIPYARD_HOME`` (the log folder is below it).
        death_signal: What it gets when the starting thread ends.
        run_as: Another user to run it as (PostgreSQL under root).
        cwd: Its working folder (default: the caller's).
    """
    folder = logs_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / f"{name}.log"
    child_env = {**env, "CLIPYARD_LOG_FILE": str(log_path)}
    with log_path.open("ab") as log:
        log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} starting {name}\n".encode())
        log.flush()
        popen = subprocess.Popen(
            argv,
            env=child_env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            preexec_fn=parent_death_signal(death_signal),
            **(run_as or {}),
        )
    return ManagedProcess(name=name, popen=popen, log_path=log_path)


def stop_child(
    process: ManagedProcess, sig: signal.Signals = signal.SIGTERM, timeout: float = STOP_TIMEOUT
) -> int | None:
    """Send ``sig`` to the child's process group (with SIGCONT, so a stopped one gets it), wait
    up to ``timeout`` seconds, then SIGKILL the group; whatever is left of it is killed too.

    Returns:
        The exit code (negative: the signal that ended it).
    """
    group = process.pid
    _signal_group(group, sig)
    if sig != signal.SIGKILL:
        _signal_group(group, signal.SIGCONT)
    try:
        process.popen.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _signal_group(group, signal.SIGKILL)
        process.popen.wait()
    _signal_group(group, signal.SIGKILL)
    return process.popen.returncode


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


@dataclass(frozen=True)
class ClusterPorts:
    """Every port the local cluster listens on, all on 127.0.0.1 (PostgreSQL takes a free one)."""

    http: tuple[int, ...]
    """The gateways' HTTP ports, in replica order."""
    nats: tuple[int, ...]
    """The NATS nodes' client ports, in node order."""
    routes: tuple[int, ...]
    """The nodes' route ports."""
    monitors: tuple[int, ...]
    """The nodes' monitoring ports (``/healthz``, ``/jsz``)."""

    @classmethod
    def from_bases(
        cls, http_port: int = DEFAULT_HTTP_PORT, nats_port: int = DEFAULT_NATS_PORT
    ) -> ClusterPorts:
        """Gateways on ``http_port`` and the next; NATS clients on ``nats_port`` and the two
        next, routes 10 above them, monitoring 20 above them (4322-4324, 4332-4334, 4342-4344).

        Raises:
            ValueError: A port would be outside 1-65535.
        """
        nats = tuple(nats_port + i for i in range(3))
        ports = cls(
            http=(http_port, http_port + 1),
            nats=nats,
            routes=tuple(p + ROUTE_OFFSET for p in nats),
            monitors=tuple(p + MONITOR_OFFSET for p in nats),
        )
        if not all(0 < port < 65536 for port in ports.every()):
            raise ValueError(f"--http-port {http_port} or --nats-port {nats_port} is out of range")
        return ports

    @classmethod
    def free(cls) -> ClusterPorts:
        """Ports the kernel says are free now (for tests: no fixed port to clash on)."""
        picked = _free_ports(11)
        return cls(http=picked[0:2], nats=picked[2:5], routes=picked[5:8], monitors=picked[8:11])

    def every(self) -> tuple[int, ...]:
        """All of them."""
        return (*self.http, *self.nats, *self.routes, *self.monitors)

    def require_free(self) -> None:
        """Raise :class:`StackError` naming the first port that is taken and the option to change.

        Raises:
            StackError: A port is taken.
        """
        for port in self.every():
            if _bindable(port):
                continue
            option = "--http-port" if port in self.http else "--nats-port"
            raise StackError(
                f"port {port} of 127.0.0.1 is taken: is another Clipyard running (`clipyard up` "
                f"uses 8080 and 4222)? Stop it, or choose other ports with {option} "
                f"(gateways: {', '.join(map(str, self.http))}; NATS clients, routes and "
                f"monitoring: {', '.join(map(str, (*self.nats, *self.routes, *self.monitors)))})"
            )


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> tuple[int, ...]:
    """``count`` distinct ports free a moment ago (all held open together while picked)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return tuple(int(sock.getsockname()[1]) for sock in socks)
    finally:
        for sock in socks:
            sock.close()
