"""A ``local_stdio`` adapter process: spawned in its own process group, its stdout and stderr
read by two tasks into ``run.log`` (interleaved, as written, at most ``log_limit`` bytes: past
that the pipes are still drained but nothing is written, and the truncation is noted at the end
of the log and in the outcome's error) with a 64 KiB tail of each kept, a wall-clock timeout
(SIGTERM the group, 5 s grace, SIGKILL, then a check that the group is gone:
``process.stop.stop_group``), and a kill on request that does the same. A contained adapter's
end also kills every process of its run's resource unit (nothing escapes its group into the next
run).

The last non-empty stdout line is the adapter's result when it is a JSON object with ``usage``
or ``result``. Nothing here stores or logs the environment (it holds the run token).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from runtime_supervisor.adapters.containment.launcher import joiner
from runtime_supervisor.adapters.process import group_members, proc_start_time, stop_group
from runtime_supervisor.adapters.slots.sandbox import LaunchPlan
from runtime_supervisor.domain import EXCERPT_BYTES

if TYPE_CHECKING:
    from runtime_supervisor.adapters.containment.cgroups import Unit

__all__ = [
    "ADAPTER_GRACE",
    "AdapterOutcome",
    "AdapterProcess",
    "AdapterReport",
    "adapter_report",
    "last_line_json",
    "spawn_adapter",
]

ADAPTER_GRACE: Final = 5.0
_READ: Final = 64 * 1024
_DRAIN: Final = 5.0


@dataclass(frozen=True, kw_only=True)
class AdapterOutcome:
    """How an adapter ended (the fields of ``SlotAdapterFinished``)."""

    end: str
    exit_code: int | None = None
    signal: str | None = None
    usage: dict[str, Any] | None = None
    result: Any = None
    stdout_excerpt: str | None = None
    stderr_excerpt: str | None = None
    log_bytes: int | None = None
    error: str | None = None
    group_gone: bool = True


@dataclass(frozen=True, kw_only=True)
class AdapterReport:
    """What an adapter reported as JSON: its ``usage`` (the adapter's own numbers, passed on
    unread) and its ``result``."""

    usage: dict[str, Any] | None
    result: Any


def adapter_report(value: Any) -> AdapterReport | None:
    """The report in a decoded JSON value: an object with ``usage`` or ``result`` (None: the
    value is not one)."""
    if isinstance(value, dict) and ("usage" in value or "result" in value):
        usage = value.get("usage")
        return AdapterReport(
            usage=usage if isinstance(usage, dict) else None, result=value.get("result")
        )
    return None


def last_line_json(stdout_tail: bytes) -> AdapterReport | None:
    """The report on the last non-empty line, when it is a JSON object with ``usage`` or
    ``result``."""
    for raw in reversed(stdout_tail.splitlines()):
        line = raw.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except ValueError:
            return None
        return adapter_report(value)
    return None


def _text(data: bytes) -> str:
    return bytes(data[-EXCERPT_BYTES:]).decode("utf-8", errors="replace")


@dataclass(kw_only=True)
class AdapterProcess:
    """A running adapter (see the module's docstring)."""

    process: asyncio.subprocess.Process
    pgid: int
    start_time: int | None
    log_path: Path
    signals_as_status: bool
    """True under bwrap: it reports a signalled command as exit 128+n."""
    _log: BinaryIO
    log_limit: int = 64 * 1024 * 1024
    unit: Unit | None = None
    """A contained adapter's resource unit: all its processes die at the end."""
    _written: int = 0
    _dropped: int = 0
    _readers: list[asyncio.Task[None]] = field(default_factory=list)
    _tails: dict[str, bytearray] = field(default_factory=dict)
    _reason: str | None = None
    _stop: asyncio.Task[bool] | None = None

    @property
    def pid(self) -> int:
        """The adapter's pid (the group's leader)."""
        return self.process.pid

    async def _read(self, name: str, stream: asyncio.StreamReader) -> None:
        tail = self._tails.setdefault(name, bytearray())
        while chunk := await stream.read(_READ):
            room = max(self.log_limit - self._written, 0)
            if room:
                self._log.write(chunk[:room])
                self._log.flush()
                self._written += min(room, len(chunk))
            self._dropped += max(len(chunk) - room, 0)
            tail += chunk
            if len(tail) > 2 * EXCERPT_BYTES:
                del tail[:-EXCERPT_BYTES]

    def kill(self, reason: str) -> asyncio.Task[bool]:
        """Stop the whole group (``reason``: ``timed_out`` or ``killed``); the first reason
        wins. Returns the stop's task (True when the group is gone)."""
        if self._stop is None:
            self._reason = reason
            self._stop = asyncio.ensure_future(self._stop_group())
        return self._stop

    async def _stop_group(self) -> bool:
        outcome = await stop_group(
            self.pgid, grace=ADAPTER_GRACE, leader_start_time=self.start_time
        )
        return not outcome.survivors

    async def wait(self, timeout: float) -> AdapterOutcome:
        """Wait for the adapter (killing it at ``timeout`` seconds), its output, and what is
        left of its group."""
        try:
            await asyncio.wait_for(asyncio.shield(self.process.wait()), timeout)
        except TimeoutError:
            self.kill("timed_out")
        if self._stop is not None:
            gone = await self._stop
        else:
            gone = True
        code = await self.process.wait()
        if group_members(self.pgid):  # children it left behind in its group
            gone = not (await stop_group(self.pgid, grace=ADAPTER_GRACE)).survivors and gone
        limit = None
        if self.unit is not None:  # and whatever left its group
            limit = (await asyncio.to_thread(self.unit.usage)).reason()
            gone = not await asyncio.to_thread(self.unit.kill) and gone
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*self._readers), _DRAIN)
        for task in self._readers:
            task.cancel()
        if self._dropped:
            self._log.write(f"\n[clipyard: {self.truncation()}]\n".encode())
        self._log.close()
        return self._outcome(code, gone, limit)

    def truncation(self) -> str:
        """What was cut from the log (empty when nothing)."""
        if not self._dropped:
            return ""
        return (
            f"the run log was truncated at {self.log_limit} bytes "
            f"({self._dropped} bytes of output dropped)"
        )

    def _outcome(self, code: int, gone: bool, limit: str | None = None) -> AdapterOutcome:
        out, err = bytes(self._tails.get("stdout", b"")), bytes(self._tails.get("stderr", b""))
        report = last_line_json(out[-EXCERPT_BYTES:])
        exit_code: int | None = code
        sig: str | None = None
        if code < 0:
            exit_code, sig = None, signal.Signals(-code).name
        elif self.signals_as_status and 128 < code <= 128 + 64:
            with contextlib.suppress(ValueError):
                exit_code, sig = None, signal.Signals(code - 128).name
        end = self._reason or "exited"
        error = None
        if end == "timed_out":
            error = "the adapter ran past its timeout and its process group was killed"
        elif end == "killed":
            error = "the adapter was killed"
        elif exit_code != 0:
            error = f"the adapter exited with {sig or f'code {exit_code}'}"
        if limit and (exit_code != 0 or sig):
            error = f"{error or 'the adapter ended'}: {limit}"
        if not gone:
            error = f"{error or 'the adapter ended'}; processes of its group survived SIGKILL"
        if self._dropped:
            error = f"{error}; {self.truncation()}" if error else self.truncation()
        try:
            size = self.log_path.stat().st_size
        except OSError:
            size = 0
        return AdapterOutcome(
            end=end,
            exit_code=exit_code,
            signal=sig,
            usage=report.usage if report else None,
            result=report.result if report else None,
            stdout_excerpt=_text(out),
            stderr_excerpt=_text(err),
            log_bytes=size,
            error=error,
            group_gone=gone,
        )


async def spawn_adapter(
    plan: LaunchPlan,
    log_path: Path,
    *,
    under_bwrap: bool,
    log_limit: int = 64 * 1024 * 1024,
) -> AdapterProcess:
    """Start the adapter of ``plan`` in its own session and process group, stdin /dev/null.

    Must be called on the event loop's thread: ``bwrap --die-with-parent`` ties the sandbox to
    the thread that forked it. ``log_limit``: the most ``run.log`` holds; the plan's unit (a
    contained run's) is joined before exec and emptied when the adapter ends.

    Raises:
        OSError: The command could not be started (not found, not executable, bad cwd).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("ab")
    try:
        process = await asyncio.create_subprocess_exec(
            *plan.argv,
            cwd=plan.cwd,
            env=plan.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            umask=plan.umask,
            preexec_fn=joiner(plan.unit, plan.limits, file_size=False),
        )
    except BaseException:
        log.close()
        raise
    adapter = AdapterProcess(
        process=process,
        pgid=process.pid,
        start_time=proc_start_time(process.pid),
        log_path=log_path,
        signals_as_status=under_bwrap,
        _log=log,
        log_limit=log_limit,
        unit=plan.unit,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    adapter._readers = [
        asyncio.create_task(adapter._read("stdout", process.stdout), name="adapter-stdout"),
        asyncio.create_task(adapter._read("stderr", process.stderr), name="adapter-stderr"),
    ]
    return adapter
