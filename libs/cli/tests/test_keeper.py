"""A process of the local stack kept running: real processes, a fast backoff."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clipyard_cli.keeper import Keeper
from clipyard_cli.restarts import RestartPolicy
from clipyard_cli.runstate import ProcessRecord
from clipyard_cli.stack import ManagedProcess, spawn, stop_process

FAST = RestartPolicy(
    first_delay=0.05, max_delay=0.2, stable_after=1.5, loop_exits=3, loop_window=30.0
)


async def ready(process: ManagedProcess) -> str | None:
    return "running"


class Seen:
    """What a keeper said and recorded."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.records: list[ProcessRecord] = []
        self.keeper: Keeper | None = None

    def say(self, text: str) -> None:
        self.lines.append(text)

    def changed(self) -> None:
        assert self.keeper is not None
        self.records.append(self.keeper.record())

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)


def keeper(seen: Seen, launch: Callable[[], ManagedProcess], *, hint: str = "") -> Keeper:
    kept = Keeper(
        "thing", launch, ready=ready, say=seen.say, changed=seen.changed, hint=hint, policy=FAST
    )
    seen.keeper = kept
    return kept


async def until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"waited {timeout:g} s for {what}")


@pytest.fixture
def stopped() -> Iterator[list[ManagedProcess]]:
    """Processes to stop after the test (a failing test must not leave any)."""
    started: list[ManagedProcess] = []
    yield started
    for process in started:
        stop_process(process, timeout=1.0)


async def test_a_killed_process_is_started_again_said_back_and_counted(
    tmp_path: Path, stopped: list[ManagedProcess]
) -> None:
    seen = Seen()

    def launch() -> ManagedProcess:
        process = spawn("thing", ["sleep", "60"], {"PATH": os.environ["PATH"]}, tmp_path)
        stopped.append(process)
        return process

    kept = keeper(seen, launch, hint="; the rest keeps running")
    first = kept.start()
    task = asyncio.create_task(kept.keep())
    try:
        await until(lambda: kept.state == "up", "up")
        os.kill(first.pid, signal.SIGKILL)
        await until(lambda: kept.process is not None and kept.process.pid != first.pid, "again")
        await until(lambda: seen.count("is back") == 1, "said back")
    finally:
        task.cancel()
    assert seen.count(f"thing (pid {first.pid}) exited (signal 9)") == 1, seen.lines
    assert seen.count("restarting it in 0.05 s; the rest keeps running") == 1, seen.lines
    assert kept.process is not None
    record = kept.record()
    assert record.pid == kept.process.pid
    assert record.state == "up"
    assert record.restarts == 1
    assert record.last_exit == "signal 9"
    assert record.last_restart is not None
    assert not record.crash_loop
    # While it waited, the record said so, without a pid.
    waiting = [r for r in seen.records if r.state == "restarting"]
    assert waiting
    assert waiting[0].pid is None
    assert waiting[0].next_start is not None


async def test_a_crash_loop_is_said_once_retried_at_the_cap_and_ends_when_it_stays_up(
    tmp_path: Path, stopped: list[ManagedProcess]
) -> None:
    seen = Seen()
    calls: list[int] = []

    def launch() -> ManagedProcess:
        calls.append(1)
        script = "echo boom; exit 3" if len(calls) <= 5 else "exec sleep 60"
        process = spawn("thing", ["sh", "-c", script], {"PATH": os.environ["PATH"]}, tmp_path)
        stopped.append(process)
        return process

    kept = keeper(seen, launch)
    kept.start()
    task = asyncio.create_task(kept.keep())
    try:
        await until(lambda: kept.restarts == 5 and kept.state == "up", "up after 5 restarts")
        assert kept.record().crash_loop
        assert not task.done()
        await until(lambda: not kept.streak.crash_loop, "the crash loop over", timeout=5.0)
    finally:
        task.cancel()
    assert seen.count("exited (exit code 3)") == 5, seen.lines
    assert seen.count("3 exits in a row within 30s, a crash loop; restarting it every 0.2 s") == 1
    assert seen.count("still in a crash loop; restarting it in 0.2 s") == 2, seen.lines
    assert seen.count("boom") >= 1, seen.lines  # the end of its log, with the first exit
    assert seen.count("has stayed up 1.5s: its crash loop is over") == 1, seen.lines
    assert not kept.record().crash_loop


async def test_a_start_that_fails_is_retried_without_giving_up(
    tmp_path: Path, stopped: list[ManagedProcess]
) -> None:
    seen = Seen()
    calls: list[int] = []

    def launch() -> ManagedProcess:
        calls.append(1)
        if len(calls) in (2, 3):
            raise FileNotFoundError("no such program")
        process = spawn("thing", ["sleep", "60"], {"PATH": os.environ["PATH"]}, tmp_path)
        stopped.append(process)
        return process

    kept = keeper(seen, launch)
    first = kept.start()
    task = asyncio.create_task(kept.keep())
    try:
        os.kill(first.pid, signal.SIGTERM)
        await until(lambda: kept.restarts == 3 and kept.state == "up", "up after 3 starts")
    finally:
        task.cancel()
    assert seen.count("thing could not start (no such program)") == 2, seen.lines
    assert kept.record().last_exit == "no such program"
