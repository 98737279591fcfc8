"""Stopping a service's whole group: SIGTERM honoured, SIGTERM ignored, grandchildren, no survivor."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from runtime_supervisor.adapters.process import (
    ExitStatus,
    StopOutcome,
    alive,
    group_members,
    read_status,
    stop_group,
)

pytestmark = pytest.mark.integration


async def _members_at_least(pgid: int, count: int) -> list[int]:
    deadline = time.monotonic() + 5
    while len(members := group_members(pgid)) < count:
        assert time.monotonic() < deadline, f"group {pgid} has only {members}"
        await asyncio.sleep(0.02)
    return members


def _gone(pids: list[int]) -> bool:
    return not any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in pids)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


async def test_sigterm_ends_the_group_with_its_grandchildren(spawn) -> None:
    service = await spawn("sleep 300 & sleep 300 & wait")
    members = await _members_at_least(service.pgid, 4)  # wrapper, sh, two sleeps
    started = time.monotonic()
    outcome = await stop_group(service.pgid, grace=30)
    assert outcome.outcome == "terminated"
    assert outcome.survivors == []
    assert time.monotonic() - started < 15, "SIGTERM ended it: the grace period was not waited"
    assert group_members(service.pgid) == []
    assert _gone(members)
    assert read_status(service.run_dir) == ExitStatus(signal=15)


_COUNTS_SIGTERM = """
import signal, sys, time
received = []
signal.signal(signal.SIGTERM, lambda *_: received.append(time.monotonic()))
print("ready", flush=True)
while not received:
    time.sleep(0.005)
time.sleep(0.5)  # a graceful shutdown: a second SIGTERM would arrive meanwhile
print(f"sigterm x{len(received)}", flush=True)
sys.exit(0)
"""


async def test_the_command_gets_sigterm_once(spawn, tmp_path: Path) -> None:
    script = tmp_path / "counts.py"
    script.write_text(_COUNTS_SIGTERM)
    service = await spawn(f"exec {sys.executable} {script}")
    deadline = time.monotonic() + 10
    while "ready" not in service.log_path.read_text():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    outcome = await stop_group(service.pgid, grace=5)
    assert outcome.outcome == "terminated"
    assert service.log_path.read_text() == "ready\nsigterm x1\n"
    assert read_status(service.run_dir) == ExitStatus(code=0)  # its own graceful exit


async def test_sigterm_ignored_gets_sigkill_after_the_grace(spawn) -> None:
    service = await spawn("trap '' TERM; sleep 300 & sleep 300 & wait")
    members = await _members_at_least(service.pgid, 4)
    started = time.monotonic()
    outcome = await stop_group(service.pgid, grace=0.5)
    elapsed = time.monotonic() - started
    assert outcome.outcome == "killed"
    assert outcome.survivors == []
    assert 0.5 <= elapsed < 3
    assert group_members(service.pgid) == []
    assert _gone(members)
    # The wrapper was killed too: no status, the caller knows it killed the group.
    assert read_status(service.run_dir) is None


async def test_a_member_that_left_the_group_within_the_session_is_stopped(spawn) -> None:
    escape = "import os, time; os.setpgid(0, 0); print(os.getpid(), flush=True); time.sleep(300)"
    service = await spawn(f"{sys.executable} -c '{escape}' & wait")
    deadline = time.monotonic() + 10
    while not service.log_path.read_text().strip():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    escaped = int(service.log_path.read_text().split()[0])
    assert os.getpgid(escaped) != service.pgid
    assert escaped in group_members(service.pgid)
    outcome = await stop_group(service.pgid, grace=5)
    assert outcome.outcome == "terminated"
    assert _gone([escaped])


async def test_stopping_a_gone_group(spawn) -> None:
    service = await spawn("exit 0")
    await asyncio.sleep(0.2)
    deadline = time.monotonic() + 5
    while group_members(service.pgid):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    assert await stop_group(service.pgid) == StopOutcome(outcome="already_gone")


async def test_a_recycled_leader_pid_is_not_stopped(spawn) -> None:
    service = await spawn("sleep 300")
    outcome = await stop_group(
        service.pgid, grace=0.5, leader_start_time=service.wrapper_start_time + 1
    )
    assert outcome.outcome == "already_gone"
    assert alive(service.pid, service.start_time or -1, service.pgid)
    outcome = await stop_group(service.pgid, grace=5, leader_start_time=service.wrapper_start_time)
    assert outcome.outcome == "terminated"


async def test_a_member_forked_after_the_stop_read_the_group_gets_sigterm_too(
    spawn, tmp_path: Path
) -> None:
    # The command ignores SIGTERM (and says so), forks a child that would end on it half a
    # second later, and leaves: the child appears after the stop's first read of the group.
    ready = tmp_path / "ignoring"
    script = tmp_path / "late_child.py"
    script.write_text(
        "import pathlib, signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"pathlib.Path({str(ready)!r}).write_text('yes')\n"
        "time.sleep(0.5)\n"
        "subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_DFL); time.sleep(300)'])\n"
        "time.sleep(0.3)\n"
    )
    service = await spawn(f"exec {sys.executable} {script}")
    deadline = time.monotonic() + 10
    while not ready.exists():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    started = time.monotonic()
    outcome = await stop_group(service.pgid, grace=10)
    assert outcome.outcome == "terminated"
    assert time.monotonic() - started < 5  # not the grace period, then SIGKILL
