"""Port allocation for runtime services (DECISIONS 8; reference §6.2 step 3, cases 55 and 56).

A port is handed out only when it is neither reserved in the supervisor's state (``reserved``:
port → owner label) nor claimed in this process by another start in flight (a claim lasts until
:meth:`PortAllocator.release` or 120 s, the time the caller has to record its reservation), and a
probe bind on 127.0.0.1 succeeds. A fixed port that another process holds is refused naming that
process, found through ``/proc/net/tcp{,6}`` (socket inode) and ``/proc/<pid>/fd``.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["PortAllocator", "PortConflict", "PortsExhausted", "parse_port_range", "port_holder"]

CLAIM_TTL = 120.0
_LISTEN = "0A"


class PortsExhausted(Exception):
    """No free port after ``attempts`` tries (409 ``workspace_runtime_port_allocation_exhausted``)."""

    def __init__(self, low: int, high: int, attempts: int) -> None:
        super().__init__(
            f"no free port in {low}-{high} after {attempts} attempts. "
            "Retry the start or configure a different runtime service port."
        )
        self.attempts = attempts


class PortConflict(Exception):
    """A fixed port is taken: reserved by ``owner``, or held by process ``pid`` (409 ``port_conflict``)."""

    def __init__(
        self, message: str, *, port: int, owner: str | None = None, pid: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.port = port
        self.owner = owner
        self.pid = pid


def parse_port_range(text: str) -> tuple[int, int]:
    """Parse ``"41000-41999"`` into ``(41000, 41999)``.

    Raises:
        ValueError: Not ``low-high`` with ``1 <= low <= high <= 65535``.
    """
    low_text, sep, high_text = text.strip().partition("-")
    if not sep or not low_text.strip().isdigit() or not high_text.strip().isdigit():
        raise ValueError(f"a port range is written low-high, like 41000-41999, not {text!r}")
    low, high = int(low_text), int(high_text)
    if not 1 <= low <= high <= 65535:
        raise ValueError(f"port range {text!r} must satisfy 1 <= low <= high <= 65535")
    return low, high


def _bindable(port: int) -> bool:
    """Whether a listener could bind 127.0.0.1:``port`` now (SO_REUSEADDR, as servers set it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _socket_inodes(port: int) -> list[str]:
    """Inodes of the sockets bound to ``port`` (listeners first)."""
    listening: list[str] = []
    other: list[str] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or int(fields[1].rsplit(":", 1)[1], 16) != port:
                continue
            if fields[9] != "0":
                (listening if fields[3] == _LISTEN else other).append(fields[9])
    return listening + other


def port_holder(port: int) -> tuple[int, str | None] | None:
    """The pid (and its cwd) of a process holding a socket on ``port``; None when unknown."""
    inodes = _socket_inodes(port)
    links = {f"socket:[{inode}]" for inode in inodes}
    if not links:
        return None
    with os.scandir("/proc") as entries:
        pids = [int(entry.name) for entry in entries if entry.name.isdigit()]
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") not in links:
                    continue
            except OSError:
                continue
            try:
                cwd: str | None = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                cwd = None
            return pid, cwd
    return None


class PortAllocator:
    """Hands out ports in ``low..high`` (auto) or checks a fixed one; safe across threads."""

    def __init__(self, low: int, high: int, *, reserved: Callable[[], Mapping[int, str]]) -> None:
        self.low = low
        self.high = high
        self._reserved = reserved
        self._claims: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def _claimed_by(self, port: int, now: float) -> str | None:
        claim = self._claims.get(port)
        if claim is None or claim[1] <= now:
            return None
        return claim[0]

    def auto(self, attempts: int = 32, *, owner: str = "") -> int:
        """A free port of the range, claimed for ``owner`` until :meth:`release` or the TTL.

        Raises:
            PortsExhausted: ``attempts`` probes failed, or no port was left to probe.
        """
        with self._lock:
            now = time.monotonic()
            self._claims = {p: c for p, c in self._claims.items() if c[1] > now}
            reserved = self._reserved()
            candidates = [
                port
                for port in range(self.low, self.high + 1)
                if port not in reserved and self._claimed_by(port, now) is None
            ]
            tried = 0
            for port in random.sample(candidates, min(attempts, len(candidates))):
                tried += 1
                if _bindable(port):
                    self._claims[port] = (owner, now + CLAIM_TTL)
                    return port
            raise PortsExhausted(self.low, self.high, tried)

    def fixed(self, port: int, owner: str) -> int:
        """Check and claim a configured port for ``owner``.

        Raises:
            PortConflict: Reserved or being claimed by another owner (named), or held by another
                process ("cross-workspace port conflict: port N is held by pid P (cwd C)").
        """
        with self._lock:
            now = time.monotonic()
            other = self._reserved().get(port)
            if other is not None and other != owner:
                raise PortConflict(
                    f"port {port} is already reserved by {other}", port=port, owner=other
                )
            claimer = self._claimed_by(port, now)
            if claimer is not None and claimer != owner:
                raise PortConflict(
                    f"port {port} is already being claimed by another managed start ({claimer})",
                    port=port,
                    owner=claimer,
                )
            if not _bindable(port):
                holder = port_holder(port)
                if holder is None:
                    where = "another process (its owner could not be found)"
                    raise PortConflict(
                        f"cross-workspace port conflict: port {port} is held by {where}", port=port
                    )
                pid, cwd = holder
                raise PortConflict(
                    f"cross-workspace port conflict: port {port} is held by pid {pid} "
                    f"(cwd {cwd or 'unknown'})",
                    port=port,
                    pid=pid,
                )
            self._claims[port] = (owner, now + CLAIM_TTL)
            return port

    def release(self, port: int) -> None:
        """Drop this process's claim on ``port`` (the state's reservation is the caller's)."""
        with self._lock:
            self._claims.pop(port, None)
