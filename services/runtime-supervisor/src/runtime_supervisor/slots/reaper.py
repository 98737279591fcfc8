"""Nothing of a run survives into the next (ARCHITECTURE §6): before a slot's worktree is handed
over and after every run, every process of the slot's user is killed, wherever it is (escaped
from its process group, in another pid namespace).

A forked child that becomes the slot user sends ``kill(-1, SIGKILL)`` (the kernel signals every
process of that user at once, so a process forking in a loop cannot outrun it); then ``/proc/*/status``
is scanned (any of real, effective, saved or filesystem uid) and whatever is left is killed by
pid, until nothing is left or the time is up. Blocking: run it in a thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Final

__all__ = ["kill_user_processes", "user_processes"]

_PROC: Final = Path("/proc")
_POLL: Final = 0.02


def user_processes(uid: int) -> list[int]:
    """The live (not zombie) processes with ``uid`` among their uids."""
    found: list[int] = []
    with os.scandir(_PROC) as entries:
        pids = [int(entry.name) for entry in entries if entry.name.isdigit()]
    for pid in pids:
        try:
            text = (_PROC / str(pid) / "status").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        uids: list[str] = []
        zombie = False
        for line in text.splitlines():
            if line.startswith("Uid:"):
                uids = line.split()[1:]
            elif line.startswith("State:"):
                zombie = line.split()[1:2] in (["Z"], ["X"])
        if not zombie and str(uid) in uids:
            found.append(pid)
    return found


def _kill_as(uid: int, gid: int) -> None:
    """``kill(-1, SIGKILL)`` from a child that is the user ``uid`` (it spares only itself)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
            code = 0
        finally:
            os._exit(code)
    os.waitpid(pid, 0)


def kill_user_processes(uid: int, gid: int, *, timeout: float = 5.0) -> list[int]:
    """SIGKILL every process of ``uid``; return those still alive after ``timeout`` seconds.

    Raises:
        ValueError: ``uid`` is root's or the service's own (never a slot user).
    """
    if uid in (0, os.getuid()):
        raise ValueError(f"refusing to kill every process of uid {uid}")
    deadline = time.monotonic() + timeout
    if os.geteuid() == 0:
        _kill_as(uid, gid)
    while True:
        left = user_processes(uid)
        if not left or time.monotonic() > deadline:
            return left
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(_POLL)
