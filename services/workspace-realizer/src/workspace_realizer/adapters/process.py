"""Running one host process: its own session (process group), bounded output, a timeout that kills
the whole group. Shared by the git runner and the shell command runner.

The process is started with :class:`subprocess.Popen` (as asyncio itself does) and watched with
plain event-loop readers (:mod:`childwatch`). asyncio's subprocess transport is not used: in
CPython 3.11 cancelling ``create_subprocess_exec`` while it connects the pipes waits forever for an
exit notice that never comes, which hung shutdowns that cancel in-flight git work. Here a
cancellation kills the group and returns at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from telemetry import scrub_url_secrets
from workspace_realizer.adapters.childwatch import ChildWatch
from workspace_realizer.adapters.ports import OUTPUT_CAP

__all__ = ["ProcessOutcome", "run_process", "scrub_bytes"]

_MARGIN = 4 * 1024
"""Kept beyond the cap so a secret cut at the cap's edge is still recognised when scrubbing."""
_KILL_GRACE = 2.0
_DRAIN_AFTER_KILL = 2.0


@dataclass(frozen=True, kw_only=True)
class ProcessOutcome:
    """How a process ended and what it wrote.

    ``stdout``/``stderr`` are the raw tails (``OUTPUT_CAP`` plus a small margin); ``full_stdout`` is
    everything when asked for (for parsing). ``returncode`` is None when the process never started
    (negative: killed by that signal).
    """

    returncode: int | None
    stdout: bytes
    stderr: bytes
    truncated: bool
    timed_out: bool
    spawn_error: str | None
    started_at: datetime
    finished_at: datetime
    full_stdout: bytes | None = None
    stdout_total: int = 0
    """Bytes the process wrote to stdout (``full_stdout`` may hold fewer: its limit)."""


class _Collector:
    def __init__(self, *, keep_full: bool, full_limit: int | None = None) -> None:
        self.tail = bytearray()
        self.total = 0
        self.full: bytearray | None = bytearray() if keep_full else None
        self.full_limit = full_limit
        self.echo: Callable[[bytes], None] | None = None

    def feed(self, chunk: bytes) -> None:
        if self.echo is not None:
            self.echo(chunk)
        self.total += len(chunk)
        if self.full is not None:
            room = len(chunk) if self.full_limit is None else self.full_limit - len(self.full)
            if room > 0:
                self.full += chunk[:room]
        self.tail += chunk
        excess = len(self.tail) - (OUTPUT_CAP + _MARGIN)
        if excess > 0:
            del self.tail[:excess]

    @property
    def truncated(self) -> bool:
        return self.total > OUTPUT_CAP


def scrub_bytes(data: bytes, secrets: Sequence[str] = (), *, cap: int | None = OUTPUT_CAP) -> bytes:
    """Scrub URL secrets (and the given literal values) from output, then keep its last ``cap`` bytes.

    Args:
        data: Raw process output.
        secrets: Literal values to hide as well (tokens handed to the child in its environment).
        cap: How many bytes of the tail to keep (None: all).

    Returns:
        The scrubbed tail.
    """
    text = data.decode("utf-8", errors="surrogateescape")
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = str(scrub_url_secrets(text))
    out = text.encode("utf-8", errors="surrogateescape")
    if cap is not None and len(out) > cap:
        out = out[-cap:]
    return out


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _kill_group(proc: subprocess.Popen[bytes], exited: asyncio.Future[None]) -> None:
    """SIGTERM the process group, then SIGKILL it after a short grace."""
    _signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), _KILL_GRACE)
    # Whatever the leader did, nothing of its group may outlive the timeout.
    _signal_group(proc.pid, signal.SIGKILL)


def _kill_now(proc: subprocess.Popen[bytes]) -> None:
    _signal_group(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        proc.wait(timeout=1.0)


def _start(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], with_stdin: bool
) -> subprocess.Popen[bytes]:
    """Fork and exec in a new session (a millisecond in the loop's thread, as in asyncio)."""
    return subprocess.Popen(
        list(argv),
        cwd=str(cwd),
        env=dict(env),
        stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    stdin: bytes | None = None,
    keep_full_stdout: bool = False,
    full_stdout_limit: int | None = None,
    on_stderr: Callable[[bytes], None] | None = None,
) -> ProcessOutcome:
    """Run ``argv`` in its own session and collect its output.

    The process gets a new session (so it has no controlling terminal and its whole process group
    can be killed). Both streams are read concurrently, keeping the tail of each. On timeout the
    group gets SIGTERM, then SIGKILL; a cancellation SIGKILLs it at once.

    Args:
        argv: The program and its arguments.
        cwd: The working directory.
        env: The complete environment of the child.
        timeout: Seconds until the process group is killed (output must also have ended by then).
        stdin: Bytes written to the child's stdin (else stdin is ``/dev/null``).
        keep_full_stdout: Keep all of stdout as well (for parsing).
        full_stdout_limit: Keep at most this many bytes of it (the rest is read and counted).
        on_stderr: Called with each chunk of stderr as it comes (git's progress).

    Returns:
        The outcome; a process that could not start has ``returncode=None`` and ``spawn_error``.
    """
    started = datetime.now(UTC)
    out = _Collector(keep_full=keep_full_stdout, full_limit=full_stdout_limit)
    err = _Collector(keep_full=False)
    err.echo = on_stderr
    try:
        proc = _start(argv, cwd=cwd, env=env, with_stdin=stdin is not None)
    except OSError as exc:
        return ProcessOutcome(
            returncode=None,
            stdout=b"",
            stderr=str(exc).encode(),
            truncated=False,
            timed_out=False,
            spawn_error=str(exc),
            started_at=started,
            finished_at=datetime.now(UTC),
        )
    watch = ChildWatch(asyncio.get_running_loop(), proc)
    timed_out = False
    try:
        watch.read(proc.stdout, out)
        watch.read(proc.stderr, err)
        if stdin is not None:
            watch.write(proc.stdin, stdin)
        watch.exit()
        exited = watch.waits[-1]
        _done, pending = await asyncio.wait(watch.waits, timeout=timeout)
        if pending:
            timed_out = True
            await _kill_group(proc, exited)
            await asyncio.wait(pending, timeout=_DRAIN_AFTER_KILL)
    except BaseException:
        _kill_now(proc)
        raise
    finally:
        watch.close()
    if proc.returncode is None:
        _kill_now(proc)
    return ProcessOutcome(
        returncode=proc.returncode,
        stdout=bytes(out.tail),
        stderr=bytes(err.tail),
        truncated=out.truncated or err.truncated,
        timed_out=timed_out,
        spawn_error=None,
        started_at=started,
        finished_at=datetime.now(UTC),
        full_stdout=bytes(out.full) if out.full is not None else None,
        stdout_total=out.total,
    )
