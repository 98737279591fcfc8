"""One ``clipyard up`` per home: its lock and the record of the processes it started.

``$CLIPYARD_HOME/run/up.lock`` is held (``flock``) by the running ``clipyard up`` and holds its
pid; ``run/stack.json`` lists the processes it started, so ``clipyard down`` can stop the stack
from another terminal, or clean up after an ``up`` that was killed outright.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = ["RunLock", "lock_holder", "read_processes", "run_dir", "write_processes"]


def run_dir(home: Path) -> Path:
    """``$CLIPYARD_HOME/run``."""
    return home / "run"


@dataclass
class RunLock:
    """The lock a running ``clipyard up`` holds on its home."""

    path: Path
    handle: IO[str]

    @classmethod
    def acquire(cls, home: Path) -> RunLock:
        """Take the home's lock and write this process's pid into it.

        Raises:
            RuntimeError: Another ``clipyard up`` holds it (the message names its pid).
        """
        folder = run_dir(home)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = folder / "up.lock"
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            handle.close()
            raise RuntimeError(
                f"another `clipyard up` (pid {holder}) is running with CLIPYARD_HOME={home}; "
                "stop it with Ctrl-C or `clipyard down`, or use another CLIPYARD_HOME"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        return cls(path=path, handle=handle)

    def release(self) -> None:
        """Forget the processes, then drop the lock."""
        (self.path.parent / "stack.json").unlink(missing_ok=True)
        self.handle.seek(0)
        self.handle.truncate()
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def lock_holder(home: Path) -> int | None:
    """The pid of the ``clipyard up`` running with ``home``, or ``None`` when none is."""
    path = run_dir(home) / "up.lock"
    if not path.exists():
        return None
    with path.open("r", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = handle.read().strip()
            return int(text) if text.isdigit() else None
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def write_processes(home: Path, processes: Mapping[str, int]) -> None:
    """Record the started processes (name -> pid, each the leader of its own group)."""
    path = run_dir(home) / "stack.json"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"up": os.getpid(), "processes": dict(processes)}), encoding="utf-8")
    tmp.replace(path)


def read_processes(home: Path) -> dict[str, int]:
    """The processes the last ``clipyard up`` recorded (empty when it stopped cleanly)."""
    path = run_dir(home) / "stack.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    processes = data.get("processes", {}) if isinstance(data, dict) else {}
    return {str(k): int(v) for k, v in processes.items() if isinstance(v, int)}
