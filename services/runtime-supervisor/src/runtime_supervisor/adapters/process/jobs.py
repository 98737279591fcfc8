"""Running a job once: ``sh -c`` in its own session, a timeout that kills its whole process group,
stdout and stderr captured separately with the last ``cap`` bytes of each kept.

As in the realizer's runner, the process is started with :class:`subprocess.Popen` and watched
with event-loop readers (asyncio's subprocess transport can hang when cancelled while it connects
the pipes in CPython 3.11). The leader's end is seen through a pidfd (or a thread calling
``waitid(WNOWAIT)``) without reaping it, so the group is SIGKILLed while its id is still pinned:
whatever the job left running in its group (``server &``) does not outlive the job.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runtime_supervisor.adapters.process.live_output import LiveFile, live_files
from servicekit.pipes import follow_pipe

__all__ = ["JOB_OUTPUT_CAP", "JobResult", "run_job"]

JOB_OUTPUT_CAP = 256 * 1024
_KILL_GRACE = 2.0
_DRAIN = 2.0
"""How long output may keep coming once the group is gone (a process that left the group)."""


@dataclass(frozen=True, kw_only=True)
class JobResult:
    """How a job ended: ``exit_code`` or ``signal`` (both None if it never started: ``error``),
    the tails of its output, their full sizes, and whether it was cut (``truncated``) or timed out."""

    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    timed_out: bool
    started_at: datetime
    finished_at: datetime
    error: str | None = None
    limit: str | None = None
    """The resource limit it hit (its end is blamed on it), when contained."""


class _Tail:
    def __init__(self, cap: int, live: LiveFile | None = None) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0
        self.live = live

    def feed(self, chunk: bytes) -> None:
        if self.live is not None:
            self.live.write(chunk)
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > self.cap:
            del self.data[: len(self.data) - self.cap]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _ended(
    loop: asyncio.AbstractEventLoop, pid: int
) -> tuple[asyncio.Future[None], Callable[[], None]]:
    """A future resolved when ``pid`` ends, leaving it unreaped (a zombie) for the caller."""
    done: asyncio.Future[None] = loop.create_future()

    def resolve() -> None:
        if not done.done():
            done.set_result(None)

    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):

        def wait() -> None:
            with contextlib.suppress(ChildProcessError):
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            with contextlib.suppress(RuntimeError):  # the loop is closed
                loop.call_soon_threadsafe(resolve)

        threading.Thread(target=wait, name=f"job-{pid}", daemon=True).start()
        return done, lambda: None

    def readable() -> None:  # a pidfd stays readable: stop watching at once
        loop.remove_reader(pidfd)
        resolve()

    loop.add_reader(pidfd, readable)

    def close() -> None:
        loop.remove_reader(pidfd)
        with contextlib.suppress(OSError):
            os.close(pidfd)

    return done, close


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _start(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    prefix: Sequence[str],
    preexec: Callable[[], None] | None,
) -> subprocess.Popen[bytes]:
    """Fork ``[prefix] sh -c`` in a new session (a millisecond in the loop's thread, as asyncio
    does)."""
    return subprocess.Popen(
        [*prefix, "/bin/sh", "-c", command],
        cwd=str(cwd),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=preexec,
    )


def _ending(code: int | None, *, signals_as_status: bool) -> tuple[int | None, int | None]:
    """``(exit_code, signal)`` of a return code (a sandbox reports signal n as 128 + n)."""
    if code is None:
        return None, None
    if code < 0:
        return None, -code
    if signals_as_status and 128 < code <= 128 + 64:
        return None, code - 128
    return code, None


def _not_started(cwd: Path, exc: OSError, started: datetime) -> JobResult:
    """The result of a job that could not start: ``error`` and no exit code."""
    return JobResult(
        exit_code=None,
        signal=None,
        stdout="",
        stderr=str(exc),
        stdout_bytes=0,
        stderr_bytes=0,
        truncated=False,
        timed_out=False,
        started_at=started,
        finished_at=datetime.now(UTC),
        error=f"cannot start the job in {cwd}: {exc}",
    )


async def run_job(
    *,
    command: str,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    cap: int = JOB_OUTPUT_CAP,
    prefix: Sequence[str] = (),
    preexec: Callable[[], None] | None = None,
    live: Path | None = None,
) -> JobResult:
    """Run ``command`` once with ``/bin/sh -c`` and collect its output.

    Args:
        command: The shell command.
        cwd: Its working directory.
        env: Its complete environment (the caller sanitizes it).
        timeout: Seconds until the group gets SIGTERM, then SIGKILL 2 s later.
        cap: Bytes kept of each stream (the last ones).
        prefix: The sandbox's argv (``bwrap … setpriv … --``) the shell runs under.
        preexec: What the child runs before exec (join the job's cgroup).
        live: The operation's output directory, written as the output comes (None: only the
            result carries it).

    Returns:
        The result; a job that could not start has ``error`` and no exit code.
    """
    started = datetime.now(UTC)
    live_out, live_err = live_files(live)
    out, err = _Tail(cap, live_out), _Tail(cap, live_err)
    try:
        return await _run(command, cwd, env, timeout, prefix, preexec, (out, err), started)
    finally:
        for writer in (live_out, live_err):
            if writer is not None:
                writer.close()


async def _run(
    command: str,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    prefix: Sequence[str],
    preexec: Callable[[], None] | None,
    tails: tuple[_Tail, _Tail],
    started: datetime,
) -> JobResult:
    out, err = tails
    cap = out.cap
    try:
        proc = _start(command, cwd=cwd, env=env, prefix=prefix, preexec=preexec)
    except OSError as exc:
        return _not_started(cwd, exc, started)
    loop = asyncio.get_running_loop()
    assert proc.stdout is not None
    assert proc.stderr is not None
    watchers = [follow_pipe(loop, proc.stdout, out), follow_pipe(loop, proc.stderr, err)]
    exited, unwatch = _ended(loop, proc.pid)
    timed_out = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(exited), timeout)
        except TimeoutError:
            timed_out = True
            _kill_group(proc.pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(exited), _KILL_GRACE)
        # The leader has ended (or ignored SIGTERM) and is not reaped yet: its group id still
        # names this job's group, so nothing else can be hit.
        _kill_group(proc.pid, signal.SIGKILL)
        await asyncio.wait([done for done, _ in watchers], timeout=_DRAIN)
    except BaseException:
        _kill_group(proc.pid, signal.SIGKILL)
        raise
    finally:
        unwatch()
        for _, finish in watchers:
            finish()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)
    exit_code, sig = _ending(proc.returncode, signals_as_status=bool(prefix))
    return JobResult(
        exit_code=exit_code,
        signal=sig,
        stdout=out.text(),
        stderr=err.text(),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        truncated=out.total > cap or err.total > cap,
        timed_out=timed_out,
        started_at=started,
        finished_at=datetime.now(UTC),
    )
