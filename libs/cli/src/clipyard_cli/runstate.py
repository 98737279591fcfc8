"""One ``clipyard up`` per home: its lock and the record of the processes it started.

``$CLIPYARD_HOME/run/up.lock`` is held (``flock``) by the running ``clipyard up`` and holds its
pid; ``run/stack.json`` lists the processes it runs (pid, start time, state, and how often and
when it restarted each), so ``clipyard down`` can stop the stack from another terminal, or clean
up after an ``up`` that was killed outright, and ``clipyard status`` can show the restarts.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, Literal, get_args

__all__ = [
    "ProcessRecord",
    "ProcessState",
    "RunLock",
    "lock_holder",
    "read_processes",
    "read_records",
    "run_dir",
    "write_processes",
]

ProcessState = Literal["starting", "up", "restarting"]
"""Started and not answering yet; answering; exited and waiting to be started again."""


@dataclass(frozen=True, kw_only=True)
class ProcessRecord:
    """What ``run/stack.json`` says of one process ``clipyard up`` runs."""

    pid: int | None
    """The current process (the leader of its own group); None while it waits for a restart."""
    started: float | None = None
    """When the current process started (seconds since the epoch)."""
    state: ProcessState = "up"
    restarts: int = 0
    """How many times ``clipyard up`` started it again after it exited."""
    last_restart: float | None = None
    """When it was last started again (seconds since the epoch)."""
    last_exit: str | None = None
    """How the process before that ended (``signal 9``, ``exit code 1``)."""
    next_start: float | None = None
    """While ``restarting``: when the next start is due (seconds since the epoch)."""
    crash_loop: bool = False
    """It exited too often in a row: restarts wait the longest backoff until it stays up."""

    @classmethod
    def from_json(cls, data: Any) -> ProcessRecord | None:
        """A record from its JSON (a bare pid, as older files hold, counts); None when unusable."""
        if isinstance(data, int) and not isinstance(data, bool):
            return cls(pid=data)
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                pid=None if data.get("pid") is None else int(data["pid"]),
                started=_seconds(data.get("started")),
                state=data["state"] if data.get("state") in get_args(ProcessState) else "up",
                restarts=int(data.get("restarts") or 0),
                last_restart=_seconds(data.get("last_restart")),
                last_exit=None if data.get("last_exit") is None else str(data["last_exit"]),
                next_start=_seconds(data.get("next_start")),
                crash_loop=bool(data.get("crash_loop")),
            )
        except (TypeError, ValueError):
            return None


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)


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


def write_processes(home: Path, records: Mapping[str, ProcessRecord]) -> None:
    """Record the processes this ``clipyard up`` runs (replacing the file at once)."""
    path = run_dir(home) / "stack.json"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    processes = {name: asdict(record) for name, record in records.items()}
    tmp.write_text(json.dumps({"up": os.getpid(), "processes": processes}), encoding="utf-8")
    tmp.replace(path)


def read_records(home: Path) -> dict[str, ProcessRecord]:
    """Everything the last ``clipyard up`` recorded, by process name (empty when it stopped
    cleanly)."""
    path = run_dir(home) / "stack.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    processes = data.get("processes", {}) if isinstance(data, dict) else {}
    if not isinstance(processes, dict):
        return {}
    records = {str(name): ProcessRecord.from_json(value) for name, value in processes.items()}
    return {name: record for name, record in records.items() if record is not None}


def read_processes(home: Path) -> dict[str, int]:
    """The pids the last ``clipyard up`` recorded (a process waiting for its restart has none)."""
    return {name: r.pid for name, r in read_records(home).items() if r.pid is not None}
