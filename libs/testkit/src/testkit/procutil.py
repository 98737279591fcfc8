"""Small process and port helpers shared by the server and service launchers."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "free_port",
    "parent_death_signal",
    "port_open",
    "stop_process",
    "tail",
    "wait_until",
]

_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free a moment ago (bind to port 0, read it, close).

    Args:
        host: The interface to probe.

    Returns:
        The port number.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    """Tell whether a TCP port accepts connections.

    Args:
        port: The port.
        host: The host.
        timeout: Connect timeout in seconds.

    Returns:
        True when a connection was accepted.
    """
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def parent_death_signal(sig: signal.Signals) -> Callable[[], None]:
    """Build a ``preexec_fn`` asking Linux to signal the child when the test run dies.

    Servers and services run in their own sessions (Ctrl-C does not reach them); this makes
    sure a killed pytest does not leave them running. Elsewhere than Linux, and when called
    outside the main thread, it does nothing.

    Args:
        sig: The signal the child receives when its parent thread exits.

    Returns:
        A function for ``subprocess.Popen(preexec_fn=...)``.
    """
    if threading.current_thread() is not threading.main_thread():
        # the signal is tied to the creating *thread*: a worker thread ending would stop the child
        return lambda: None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):  # not Linux
        return lambda: None

    def set_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

    return set_signal


def stop_process(
    process: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGTERM, timeout: float = 5.0
) -> tuple[int, bool]:
    """Signal a process and wait for it; SIGKILL it when it outlives the timeout.

    Args:
        process: The child.
        sig: The first signal (SIGTERM; SIGINT for PostgreSQL's fast shutdown).
        timeout: Seconds to wait before SIGKILL.

    Returns:
        ``(exit code, exited in time)``.
    """
    if process.poll() is not None:
        return process.returncode, True
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, sig)
    try:
        return process.wait(timeout), True
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
        return process.wait(), False


def tail(path: Path, limit: int = 4000) -> str:
    """Return the end of a log file (for failure messages).

    Args:
        path: The file (missing is fine).
        limit: How many characters at most.

    Returns:
        The last ``limit`` characters, or a note when the file does not exist.
    """
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"<no log at {path}>"
    return text[-limit:]


def wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    interval: float = 0.01,
    alive: Callable[[], bool],
) -> bool:
    """Poll ``condition`` until it holds, the timeout passes, or ``alive`` turns false.

    Args:
        condition: What to wait for.
        timeout: Seconds.
        interval: Seconds between polls.
        alive: Checked each round; a dead process ends the wait early.

    Returns:
        True when the condition held.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if not alive():
            return False
        time.sleep(interval)
    return condition()
