"""The host's own facts, read beside what the API says: processes (``/proc``), ports (a bind of
our own), and the process groups a test's stack left running.

Shared by ``tests/e2e/`` and ``tests/bench/test_runtime_bench.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import inspect
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

__all__ = [
    "alive",
    "find_server_pid",
    "free_port",
    "group_members",
    "parent_pid",
    "port_free",
    "processes_mentioning",
    "reap",
    "start_time",
    "wait_gone",
    "wait_until",
]


def free_port() -> int:
    """A port free on 127.0.0.1 right now (the kernel's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:``port`` now (SO_REUSEADDR, as servers set it,
    so a TIME_WAIT left by our own probes does not count as held)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(1)
        except OSError:
            return False
        return True


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _stat_fields(pid: int) -> list[str] | None:
    """``[state, ppid, pgrp, ...]``: ``/proc/<pid>/stat`` after the name."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The name (field 2) may hold spaces and parentheses: split after its last ')'.
    return text[text.rindex(")") + 2 :].split()


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is no zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def parent_pid(pid: int) -> int | None:
    """The parent of process ``pid`` (``/proc/<pid>/stat`` field 4), None when it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[1])


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def group_members(pgid: int) -> list[int]:
    """The live (non-zombie) processes of process group ``pgid``."""
    members = []
    for pid in _pids():
        fields = _stat_fields(pid)
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(pid)
    return members


def find_server_pid(port: int) -> int:
    """The ``python3 -m http.server <port>`` process: found by its command line and its port.

    Raises:
        AssertionError: None, or more than one, is running.
    """
    found = []
    for pid in _pids():
        args = _cmdline(pid)
        if "http.server" in args and str(port) in args and alive(pid):
            exe = os.path.basename(os.path.realpath(f"/proc/{pid}/exe")) if args else ""
            if exe.startswith("python"):
                found.append(pid)
    assert len(found) == 1, f"expected one http.server on port {port}, found pids {found}"
    return found[0]


def processes_mentioning(text: str) -> list[str]:
    """Live processes (``<pid>: <command line>``) whose command line or environment mentions
    ``text``, this test process aside."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (proc / "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if alive(int(proc.name)) and (text in cmdline or text in environ):
            found.append(f"{proc.name}: {cmdline.strip()}")
    return found


async def wait_gone(pid: int, timeout: float = 15.0) -> None:
    """Wait until process ``pid`` has ended (gone or a zombie)."""
    await wait_until(lambda: not alive(pid), timeout, f"process {pid} to end")


async def wait_until(
    check: Callable[[], Any | Awaitable[Any]], timeout: float, what: str, interval: float = 0.1
) -> Any:
    """Poll ``check`` (plain or async) until it returns something truthy, and return that.

    Raises:
        AssertionError: ``timeout`` seconds passed (the message says what was awaited).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        await asyncio.sleep(interval)


def _started_at(pid: int) -> float | None:
    """When process ``pid`` started, in seconds since the epoch (within a clock tick)."""
    ticks = start_time(pid)
    if ticks is None:
        return None
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")


def _recorded_groups(home: Path) -> set[int]:
    """The process groups of the service commands recorded under ``home/runtime/*/child.pid``
    that still run: found even when their wrapper is gone. A pid counts only when its process
    started before the file was written (the wrapper writes it right after the fork), so a
    reused pid is left alone."""
    groups: set[int] = set()
    for pid_file in (home / "runtime").glob("*/child.pid"):
        try:
            pid, written = int(pid_file.read_text().strip()), pid_file.stat().st_mtime
        except (OSError, ValueError):
            continue
        began = _started_at(pid)
        if began is not None and alive(pid) and began <= written + 0.25:
            with contextlib.suppress(ProcessLookupError):
                groups.add(os.getpgid(pid))
    return groups


def reap(home: Path | str) -> list[int]:
    """SIGKILL every runtime-service process group a test's stack left running.

    Services outlive the supervisor by design (DECISIONS 7), so a test that fails midway would
    leave them behind. Each runs under a wrapper whose command line names its run directory under
    ``home``; the wrapper leads the service's session and process group. A command whose wrapper
    is gone is found by the pid its wrapper wrote. The detached relays and gates of the home's
    network namespaces (each leads its own session; its command line names the namespace) go
    too. Returns the groups killed.
    """
    marker = str(home)
    groups = _recorded_groups(Path(home))
    folder = Path(home) / "netns"
    namespaces = [f"/{ns.name}" for ns in folder.iterdir()] if folder.is_dir() else []
    for pid in _pids():
        args = _cmdline(pid)[1:]
        ours = any(arg.startswith(marker) for arg in args) or any(
            ns in arg for arg in args for ns in namespaces
        )
        if pid != os.getpid() and ours:
            with contextlib.suppress(ProcessLookupError):
                if os.getpgid(pid) == pid:
                    groups.add(pid)
    groups.discard(os.getpgid(0))
    killed = []
    for group in sorted(groups):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
            killed.append(group)
    return killed


def answers(port: int) -> bool:
    """Whether ``GET /`` on ``127.0.0.1:<port>`` answers 200."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        connection.request("GET", "/")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()
