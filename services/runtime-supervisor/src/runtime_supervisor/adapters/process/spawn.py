"""Starting a runtime service under its wrapper (``wrapper.sh``), detached from the supervisor.

The wrapper leads a new session, so its pid is the process group id of everything the service
starts; its stdin is ``/dev/null`` and its stdout/stderr go to the service's log file, never to a
pipe of the supervisor, so the service outlives a supervisor that is SIGKILLed (DECISIONS 7).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime_supervisor.adapters.process.inspect import last_output, proc_stat, read_status
from runtime_supervisor.adapters.process.watch import reap_child

__all__ = ["WRAPPER", "SpawnError", "Spawned", "spawn_service"]

WRAPPER = Path(__file__).with_name("wrapper.sh")
"""The wrapper script (package data)."""
SHELL = "/bin/sh"
_STARTUP_TIMEOUT = 10.0
"""How long the wrapper may take to start the command and write ``child.pid``."""
_POLL = 0.002


class SpawnError(Exception):
    """The service could not be started; ``output`` is what it wrote before it ended."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.output = output


@dataclass(frozen=True, kw_only=True)
class Spawned:
    """A started service: its command, its wrapper (the group leader) and its files.

    Start times are clock ticks since boot (``/proc/<pid>/stat`` field 22); with the pid and the
    group they identify the processes again after a supervisor restart. ``start_time`` is None
    when the command ended before it could be read.
    """

    pid: int
    """The command's pid (the ``sh -c`` of the command, or the program it executed)."""
    pgid: int
    """The wrapper's pid: leader of the service's session and process group."""
    start_time: int | None
    wrapper_start_time: int
    run_dir: Path
    log_path: Path

    @property
    def status_path(self) -> Path:
        """Where the wrapper writes ``exit <code>`` or ``signal <n>``."""
        return self.run_dir / "status"


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _command_start_time(pid: int, wrapper: int) -> int | None:
    """The command's start time, if ``pid`` is still the wrapper's child (not a recycled pid)."""
    stat = proc_stat(pid)
    if stat is None or stat.ppid != wrapper or stat.pgid != wrapper:
        return None
    return stat.start_time


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _start(
    *,
    command: str,
    cwd: Path,
    env: Mapping[str, str],
    run_dir: Path,
    prefix: Sequence[str],
    preexec: Callable[[], None] | None,
) -> subprocess.Popen[bytes]:
    """Prepare ``run_dir`` and fork the wrapper (a millisecond in the loop's thread, as asyncio does)."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in ("child.pid", "child.pid.tmp", "status", "status.tmp"):
            (run_dir / stale).unlink(missing_ok=True)
        with (run_dir / "output.log").open("ab") as log:
            return subprocess.Popen(
                [SHELL, str(WRAPPER), str(run_dir), command, *prefix],
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                preexec_fn=preexec,
            )
    except OSError as exc:
        raise SpawnError(f"cannot start the service in {cwd}: {exc}") from exc


async def spawn_service(
    *,
    command: str,
    cwd: Path,
    env: Mapping[str, str],
    run_dir: Path,
    prefix: Sequence[str] = (),
    preexec: Callable[[], None] | None = None,
) -> Spawned:
    """Start ``command`` under the wrapper, in its own session, with its output in ``run_dir``.

    Returns once the wrapper has started the command (``run_dir/child.pid`` exists). A ``status``
    or ``child.pid`` left in ``run_dir`` by an earlier run is removed first; ``output.log`` is
    appended to.

    Args:
        command: The shell command (run with ``/bin/sh -c``).
        cwd: Its working directory.
        env: Its complete environment (the caller sanitizes it and adds ``PORT``/``HOST``).
        run_dir: The service's directory (created if missing).
        prefix: The sandbox's argv (``bwrap … setpriv … --``) the wrapper runs the command
            under (the wrapper itself stays outside, writing ``run_dir``).
        preexec: What the wrapper runs before exec (join the service's cgroup).

    Returns:
        The started service.

    Raises:
        SpawnError: The wrapper could not start, or ended before it started the command.
    """
    proc = _start(
        command=command, cwd=cwd, env=env, run_dir=run_dir, prefix=prefix, preexec=preexec
    )
    log_path = run_dir / "output.log"
    # Read before the reaper runs: until reaped, even an ended wrapper still has its stat.
    wrapper_start = proc_stat(proc.pid)
    ended = reap_child(proc)
    try:
        pid = await _await_child_pid(run_dir / "child.pid", ended)
    except BaseException:
        _kill_group(proc.pid)
        raise
    if pid is None:
        status = read_status(run_dir) or f"wrapper exit {proc.returncode}"
        raise SpawnError(
            f"the service wrapper ended before starting the command ({status})",
            last_output(log_path),
        )
    return Spawned(
        pid=pid,
        pgid=proc.pid,
        start_time=_command_start_time(pid, proc.pid),
        wrapper_start_time=wrapper_start.start_time if wrapper_start else 0,
        run_dir=run_dir,
        log_path=log_path,
    )


async def _await_child_pid(path: Path, ended: threading.Event) -> int | None:
    """Poll for ``child.pid``; None when the wrapper ended without writing it."""
    deadline = time.monotonic() + _STARTUP_TIMEOUT
    while True:
        pid = _read_pid(path)
        if pid is not None:
            return pid
        if ended.is_set():
            return _read_pid(path)
        if time.monotonic() > deadline:
            raise SpawnError(
                f"the service wrapper did not start the command in {_STARTUP_TIMEOUT:g}s"
            )
        await asyncio.sleep(_POLL)
