"""One `clipyard up` per home, and what `clipyard down` finds."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from clipyard_cli.down import run_down
from clipyard_cli.home import HomeError
from clipyard_cli.run import run_service
from clipyard_cli.runstate import RunLock, lock_holder, read_processes, write_processes


def test_a_second_up_on_the_same_home_is_refused_naming_the_first(tmp_path: Path) -> None:
    lock = RunLock.acquire(tmp_path)
    try:
        assert lock_holder(tmp_path) == os.getpid()
        with pytest.raises(RuntimeError, match=f"pid {os.getpid()}"):
            RunLock.acquire(tmp_path)
    finally:
        lock.release()
    assert lock_holder(tmp_path) is None
    RunLock.acquire(tmp_path).release()


def test_the_lock_is_seen_from_another_process(tmp_path: Path) -> None:
    lock = RunLock.acquire(tmp_path)
    try:
        probe = subprocess.run(
            ["flock", "-n", "-s", str(tmp_path / "run" / "up.lock"), "true"], check=False
        )
        assert probe.returncode != 0
    finally:
        lock.release()


def test_processes_are_recorded_and_forgotten_on_release(tmp_path: Path) -> None:
    lock = RunLock.acquire(tmp_path)
    write_processes(tmp_path, {"nats-server": 11, "api-gateway": 12})
    assert read_processes(tmp_path) == {"nats-server": 11, "api-gateway": 12}
    lock.release()
    assert read_processes(tmp_path) == {}


def test_down_without_a_stack_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_down({"CLIPYARD_HOME": str(tmp_path)}) == 0
    assert "no stack is running" in capsys.readouterr().out


def group_gone(pgid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_down_stops_leftovers_of_an_up_that_was_killed(tmp_path: Path) -> None:
    # A process leading its own session, as the stack's are, with a child in its group.
    leftover = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], start_new_session=True)
    try:
        write_processes(tmp_path, {"api-gateway": leftover.pid, "nats-server": 999_999_999})
        assert run_down({"CLIPYARD_HOME": str(tmp_path)}) == 0
        assert leftover.wait(timeout=10) is not None
        assert read_processes(tmp_path) == {}
        assert group_gone(leftover.pid)
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()


def test_run_refuses_a_service_the_running_stack_already_runs(tmp_path: Path) -> None:
    lock = RunLock.acquire(tmp_path)
    try:
        # This test process stands in for the stack's live workspace-realizer.
        write_processes(tmp_path, {"workspace-realizer": os.getpid()})
        with pytest.raises(HomeError, match="--skip workspace-realizer"):
            run_service({"CLIPYARD_HOME": str(tmp_path)}, "realizer")
    finally:
        lock.release()
