"""``clipyard down``: stop the stack a ``clipyard up`` runs with this home, from another terminal.

It sends SIGTERM to that ``clipyard up`` (which then stops everything in order) and waits. If
``clipyard up`` was killed outright and left processes behind, it stops those (services first,
NATS last), each only if it still leads its own session, as the stack's processes do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from clipyard_cli.home import resolve_home
from clipyard_cli.runstate import lock_holder, read_processes, run_dir

__all__ = ["run_down"]

UP_STOP_TIMEOUT = 120.0


def run_down(env: Mapping[str, str], out: TextIO | None = None) -> int:
    """Stop the local stack of ``$CLIPYARD_HOME``.

    Returns:
        0 when nothing of the stack runs any more, 1 otherwise.
    """
    out = sys.stdout if out is None else out
    home = resolve_home(env)
    pid = lock_holder(home)
    if pid is not None:
        print(f"clipyard down: stopping `clipyard up` (pid {pid})", file=out, flush=True)
        _kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + UP_STOP_TIMEOUT
        while lock_holder(home) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        if lock_holder(home) is not None:
            print(f"clipyard down: pid {pid} is still running", file=sys.stderr)
            return 1
        print("clipyard down: stopped", file=out)
        return 0
    leftovers = {n: p for n, p in read_processes(home).items() if _leads_session(p)}
    if not leftovers:
        print(f"clipyard down: no stack is running with CLIPYARD_HOME={home}", file=out)
        return 0
    order = sorted(leftovers, key=lambda name: name == "nats-server")
    for name in order:
        print(f"clipyard down: stopping leftover {name} (pid {leftovers[name]})", file=out)
        _stop_group(leftovers[name])
    (run_dir(home) / "stack.json").unlink(missing_ok=True)
    return 0


def _leads_session(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process leading its own session."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
        return os.getsid(pid) == pid and stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _stop_group(pgid: int, timeout: float = 5.0) -> None:
    _kill(-pgid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _leads_session(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    _kill(-pgid, signal.SIGKILL)


def _kill(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
