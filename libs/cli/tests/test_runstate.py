"""One `clipyard up` per home, and what `clipyard down`, `clipyard run` and `clipyard status` find."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from clipyard_cli.down import run_down
from clipyard_cli.home import HomeError
from clipyard_cli.run import run_service
from clipyard_cli.runstate import (
    ProcessRecord,
    RunLock,
    lock_holder,
    read_processes,
    read_records,
    write_processes,
)
from clipyard_cli.status import run_status
from natsbus.connection import NatsConnectError


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
    write_processes(
        tmp_path, {"nats-server": ProcessRecord(pid=11), "api-gateway": ProcessRecord(pid=12)}
    )
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
        write_processes(
            tmp_path,
            {
                "api-gateway": ProcessRecord(pid=leftover.pid),
                "nats-server": ProcessRecord(pid=999_999_999),
            },
        )
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
        write_processes(tmp_path, {"workspace-realizer": ProcessRecord(pid=os.getpid())})
        with pytest.raises(HomeError, match="--skip workspace-realizer"):
            run_service({"CLIPYARD_HOME": str(tmp_path)}, "realizer")
    finally:
        lock.release()


def test_restarts_are_recorded_and_a_process_waiting_for_its_restart_has_no_pid(
    tmp_path: Path,
) -> None:
    realizer = ProcessRecord(
        pid=None,
        started=None,
        state="restarting",
        restarts=6,
        last_restart=1_700_000_000.5,
        last_exit="exit code 1",
        next_start=1_700_000_010.5,
        crash_loop=True,
    )
    nats = ProcessRecord(pid=11, started=1_700_000_001.0, restarts=1, last_exit="signal 9")
    write_processes(tmp_path, {"nats-server": nats, "workspace-realizer": realizer})
    assert read_records(tmp_path) == {"nats-server": nats, "workspace-realizer": realizer}
    assert read_processes(tmp_path) == {"nats-server": 11}


def test_a_file_of_bare_pids_still_reads(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "stack.json").write_text(
        '{"up": 1, "processes": {"nats-server": 11, "api-gateway": "x", "bad": [1]}}'
    )
    assert read_records(tmp_path) == {"nats-server": ProcessRecord(pid=11)}


def test_run_refuses_a_service_the_running_stack_is_restarting(tmp_path: Path) -> None:
    lock = RunLock.acquire(tmp_path)
    try:
        waiting = ProcessRecord(pid=None, state="restarting", restarts=1)
        write_processes(tmp_path, {"workspace-realizer": waiting})
        with pytest.raises(HomeError, match="restarting it"):
            run_service({"CLIPYARD_HOME": str(tmp_path)}, "realizer")
    finally:
        lock.release()


async def test_status_shows_the_processes_of_up_even_while_nats_does_not_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        "CLIPYARD_HOME": str(tmp_path),
        "CLIPYARD_NATS_URL": f"nats://127.0.0.1:{port}",
        "CLIPYARD_NATS_PASSWORD": "unused",
    }
    lock = RunLock.acquire(tmp_path)
    try:
        nats = ProcessRecord(
            pid=None, state="restarting", restarts=3, last_restart=1.0, last_exit="signal 9"
        )
        write_processes(tmp_path, {"nats-server": nats})
        with pytest.raises(NatsConnectError):
            await run_status(env)
    finally:
        lock.release()
    out = capsys.readouterr().out
    assert f"clipyard up (pid {os.getpid()}) runs:" in out
    assert "after signal 9" in out
