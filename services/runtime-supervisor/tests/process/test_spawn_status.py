"""Spawning under the wrapper, the status file it writes, and the adoption checks (real processes)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime_supervisor.adapters.process import (
    ExitStatus,
    SpawnError,
    alive,
    group_members,
    proc_start_time,
    read_status,
    spawn_service,
    wait_exit,
)
from runtime_supervisor.adapters.process import spawn as spawn_module
from runtime_supervisor.adapters.process.inspect import proc_stat

pytestmark = pytest.mark.integration


@pytest.fixture(params=["/bin/sh", "/bin/bash"])
def wrapper_shell(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the wrapper under dash (``/bin/sh`` here) and under bash: both must record the same."""
    shell = str(request.param)
    monkeypatch.setattr(spawn_module, "SHELL", shell)
    return shell


async def _until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


async def test_spawn_runs_the_command_in_the_wrappers_group(spawn, tmp_path: Path) -> None:
    service = await spawn("echo hello from $GREETING; sleep 30", env={"GREETING": "the service"})
    assert service.pgid != service.pid
    assert (service.run_dir / "child.pid").read_text().strip() == str(service.pid)
    assert service.start_time == proc_start_time(service.pid)
    assert service.wrapper_start_time == proc_start_time(service.pgid)
    assert os.getpgid(service.pid) == service.pgid
    assert os.getsid(service.pgid) == service.pgid  # the wrapper leads a new session
    assert alive(service.pid, service.start_time, service.pgid)
    assert alive(service.pgid, service.wrapper_start_time, service.pgid)
    assert {service.pgid, service.pid} <= set(group_members(service.pgid))
    await _until(lambda: b"hello" in service.log_path.read_bytes())
    assert service.log_path.read_text() == "hello from the service\n"
    assert read_status(service.run_dir) is None


async def test_the_command_sees_exactly_the_environment_given(spawn) -> None:
    service = await spawn("env; exit 0", env={"ONLY": "this"})
    await wait_exit(service.pgid)
    lines = set(service.log_path.read_text().splitlines())
    assert "ONLY=this" in lines
    assert not any(line.startswith(("run_dir=", "command=", "child=")) for line in lines)


@pytest.mark.parametrize("env", [{}, {"PATH": "/nonexistent"}])
async def test_the_wrapper_needs_nothing_of_the_commands_path(spawn, env: dict[str, str]) -> None:
    service = await spawn("echo builtin only; exit 6", env=env)
    await asyncio.wait_for(wait_exit(service.pgid), 10)
    assert read_status(service.run_dir) == ExitStatus(code=6)
    assert service.log_path.read_text() == "builtin only\n"


@pytest.mark.parametrize(
    ("command", "expected", "clean"),
    [
        ("exit 0", ExitStatus(code=0), True),
        ("echo failing; exit 3", ExitStatus(code=3), False),
        ("exec sh -c 'kill -KILL $$'", ExitStatus(signal=9), False),
    ],
)
async def test_status_of_a_command_that_ends_by_itself(
    spawn, wrapper_shell: str, command: str, expected: ExitStatus, clean: bool
) -> None:
    service = await spawn(command)
    await asyncio.wait_for(wait_exit(service.pgid), 10)
    status = read_status(service.run_dir)
    assert status == expected
    assert status.clean is clean
    assert not (service.run_dir / "status.tmp").exists()


@pytest.mark.parametrize(
    ("sig", "expected", "clean"),
    [(signal.SIGKILL, ExitStatus(signal=9), False), (signal.SIGTERM, ExitStatus(signal=15), True)],
)
async def test_status_of_a_command_signalled_from_outside(
    spawn, wrapper_shell: str, sig: signal.Signals, expected: ExitStatus, clean: bool
) -> None:
    service = await spawn("sleep 60")
    os.kill(service.pid, sig)
    await asyncio.wait_for(wait_exit(service.pgid), 10)
    status = read_status(service.run_dir)
    assert status == expected
    assert status is not None
    assert status.clean is clean
    assert str(status) == f"signal {int(sig)}"


async def test_a_program_killed_under_the_commands_shell_is_recorded_by_its_signal(
    spawn, wrapper_shell: str
) -> None:
    # `sh -c` runs the program as its child and reports its death by SIGKILL as 137.
    service = await spawn("sleep 60 && echo not reached")
    deadline = time.monotonic() + 5
    while not (
        programs := [p for p in group_members(service.pgid) if p not in (service.pgid, service.pid)]
    ):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    os.kill(programs[0], signal.SIGKILL)
    await asyncio.wait_for(wait_exit(service.pgid), 10)
    assert read_status(service.run_dir) == ExitStatus(signal=9)
    assert "not reached" not in service.log_path.read_text()


async def test_sigterm_to_the_wrapper_alone_reaches_the_command(spawn, wrapper_shell: str) -> None:
    service = await spawn("sleep 60")
    os.kill(service.pgid, signal.SIGTERM)  # the wrapper only, not the group
    await asyncio.wait_for(wait_exit(service.pid, start_time=service.start_time), 10)
    await asyncio.wait_for(wait_exit(service.pgid), 10)
    assert read_status(service.run_dir) == ExitStatus(signal=15)


async def test_sigterm_to_wrappers_just_spawned_is_never_lost(
    spawn, wrapper_shell: str, tmp_path: Path
) -> None:
    # Right after spawn_service returns, the command may not have executed `sh -c` yet; a
    # SIGTERM forwarded in that window must still end it. Busy loops on every CPU make the
    # window likely (the wrapper's child is then often scheduled after the wrapper has gone on).
    busy = [
        subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"])
        for _ in range(os.cpu_count() or 2)
    ]
    try:
        services = []
        for i in range(100):
            service = await spawn("sleep 60", name=f"s{i}")
            os.kill(service.pgid, signal.SIGTERM)
            services.append(service)
        await asyncio.wait_for(asyncio.gather(*(wait_exit(s.pgid) for s in services)), 20)
    finally:
        for loop in busy:
            loop.kill()
            loop.wait()
    assert {str(read_status(s.run_dir)) for s in services} == {"signal 15"}


async def test_the_wrapper_keeps_waiting_when_its_trap_interrupts_wait(
    spawn, wrapper_shell: str
) -> None:
    # The command handles SIGTERM and exits 0 a little later: the trapped SIGTERM interrupts the
    # wrapper's `wait` (status 143) while the command still runs; the real status is 0.
    service = await spawn(
        "trap 'sleep 0.3; echo bye; exit 0' TERM; echo trapped; while :; do sleep 0.05; done"
    )
    # Signalled only once the command's trap is set (the wrapper's is set before spawn returns).
    deadline = time.monotonic() + 10
    while "trapped" not in service.log_path.read_text():
        assert time.monotonic() < deadline, "the command did not set its trap within 10 s"
        await asyncio.sleep(0.02)
    os.kill(service.pgid, signal.SIGTERM)
    await asyncio.wait_for(wait_exit(service.pgid), 10)
    assert read_status(service.run_dir) == ExitStatus(code=0)
    assert "bye" in service.log_path.read_text()


async def test_a_stale_status_is_removed_before_a_new_start(spawn, tmp_path: Path) -> None:
    first = await spawn("exit 4", name="again")
    await wait_exit(first.pgid)
    assert read_status(first.run_dir) == ExitStatus(code=4)
    second = await spawn("echo second; sleep 30", name="again")
    assert read_status(second.run_dir) is None
    assert second.log_path == first.log_path  # the log is appended to


async def test_a_missing_cwd_is_a_spawn_error(tmp_path: Path, service_env: dict[str, str]) -> None:
    with pytest.raises(SpawnError, match="cannot start the service in"):
        await spawn_service(
            command="true", cwd=tmp_path / "absent", env=service_env, run_dir=tmp_path / "run"
        )


async def test_a_wrapper_that_ends_early_is_a_spawn_error_with_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service_env: dict[str, str]
) -> None:
    broken = tmp_path / "broken-wrapper.sh"
    broken.write_text("echo 'wrapper cannot run' >&2\nexit 2\n")
    monkeypatch.setattr(spawn_module, "WRAPPER", broken)
    with pytest.raises(SpawnError, match="ended before starting the command") as raised:
        await spawn_service(
            command="sleep 60", cwd=tmp_path, env=service_env, run_dir=tmp_path / "run"
        )
    assert "wrapper cannot run" in raised.value.output


async def test_alive_is_false_for_another_start_time_group_or_a_dead_pid(spawn) -> None:
    service = await spawn("sleep 60")
    assert service.start_time is not None
    assert alive(service.pid, service.start_time, service.pgid)
    assert not alive(service.pid, service.start_time + 1, service.pgid)  # a recycled pid
    assert not alive(service.pid, service.start_time, service.pgid + 1)
    assert not alive(service.pid, service.start_time, os.getpgid(0))
    os.kill(service.pid, signal.SIGKILL)
    await wait_exit(service.pgid)
    assert not alive(service.pid, service.start_time, service.pgid)


async def test_alive_is_false_for_a_zombie() -> None:
    child = subprocess.Popen(["true"], start_new_session=True)
    try:
        start = proc_start_time(child.pid)
        assert start is not None
        deadline = time.monotonic() + 5
        while (stat := proc_stat(child.pid)) is not None and stat.state != "Z":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert proc_start_time(child.pid) == start  # still listed in /proc
        assert not alive(child.pid, start, child.pid)
    finally:
        child.wait()


_ORPHANING_SUPERVISOR = """
import asyncio, json, os, sys
from pathlib import Path
from runtime_supervisor.adapters.process import spawn_service

async def main():
    s = await spawn_service(command=sys.argv[1], cwd=Path(sys.argv[2]),
                            env={"PATH": os.environ["PATH"], "STOP": sys.argv[3]},
                            run_dir=Path(sys.argv[4]))
    print(json.dumps({"pid": s.pid, "pgid": s.pgid, "start": s.start_time,
                      "wrapper_start": s.wrapper_start_time}), flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.parametrize("how", ["exits", "sigkill", "exits-polled"])
async def test_a_service_outlives_a_killed_supervisor_and_is_adoptable(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop, run_dir = tmp_path / "stop", tmp_path / "run"
    command = 'echo started; while [ ! -e "$STOP" ]; do sleep 0.05; done; echo stopping; exit 5'
    supervisor = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _ORPHANING_SUPERVISOR,
            command,
            str(tmp_path),
            str(stop),
            str(run_dir),
        ],
        stdout=subprocess.PIPE,
    )
    assert supervisor.stdout is not None
    try:
        line = await asyncio.wait_for(asyncio.to_thread(supervisor.stdout.readline), 20)
        record = json.loads(line)
    finally:
        supervisor.kill()  # SIGKILL: no cleanup of any kind
        supervisor.wait()
        supervisor.stdout.close()
    pid, pgid = record["pid"], record["pgid"]
    try:
        await asyncio.sleep(0.3)
        assert alive(pid, record["start"], pgid)
        assert alive(pgid, record["wrapper_start"], pgid)
        wrapper = proc_stat(pgid)
        assert wrapper is not None
        assert wrapper.ppid != supervisor.pid
        assert read_status(run_dir) is None
        if how == "exits-polled":  # no pidfds: /proc is polled

            def no_pidfd(pid: int, flags: int = 0) -> int:
                raise OSError(38, "pidfd_open disabled for this test")

            monkeypatch.setattr(os, "pidfd_open", no_pidfd)
        if how == "sigkill":
            os.kill(pid, signal.SIGKILL)
        else:
            stop.touch()
        # Not our child (its parent was the killed supervisor): waited for through a pidfd.
        await asyncio.wait_for(wait_exit(pgid, start_time=record["wrapper_start"], poll=0.05), 10)
    finally:
        for member in group_members(pgid):
            os.kill(member, signal.SIGKILL)
    if how == "sigkill":
        assert read_status(run_dir) == ExitStatus(signal=9)
    else:
        assert read_status(run_dir) == ExitStatus(code=5)
        assert (run_dir / "output.log").read_text() == "started\nstopping\n"
    assert not alive(pid, record["start"], pgid)
