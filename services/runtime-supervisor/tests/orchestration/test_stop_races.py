"""Stops against what happened meanwhile, with real service processes: a stop decided because no
run held a service (a run's release, an idle timer) leaves it running when a run leased it while
the stop waited for the identity's lock; a stop signals a process group only while its leader is
still the wrapper recorded at spawn; a command that had already crashed when the stop came is
recorded ``failed`` with its status, not ``stopped`` (DECISIONS 8)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
from state_world import World, runtime_of

from contracts.workspace_config import ServiceSpec, StopPolicy
from runtime_supervisor.adapters.process import proc_start_time, read_status
from runtime_supervisor.domain import RuntimeTarget, ServiceRecord
from runtime_supervisor.domain.config.effective import WorkspaceCommand, effective_commands
from runtime_supervisor.orchestration.context import Supervisor
from runtime_supervisor.orchestration.runs import after_release
from runtime_supervisor.orchestration.starting import start_service
from runtime_supervisor.orchestration.stopping import instance_lock_key, stop_instance

pytestmark = pytest.mark.integration

SLEEPER = "exec sleep 300"


def _target(
    world: World, workdir: Path, spec: ServiceSpec
) -> tuple[RuntimeTarget, WorkspaceCommand]:
    pw = world.project_workspace(runtime_of(spec), cwd=str(workdir))
    ws = world.workspace(pw, cwd=str(workdir))
    target = world.target(ws)
    (command,) = effective_commands(target.own_runtime, target.project_runtime).services
    return target, command


async def _released(world: World, sup: Supervisor, run: str, ws: str) -> ServiceRecord:
    """The controller's ``run.finished``; its releases handed to ``after_release`` as the
    supervisor's hook does."""
    world.run_finished(run, ws=ws)
    _run, releases = world.finished[-1]
    ((record, no_leases_left),) = releases
    assert no_leases_left
    after_release(sup, record)
    return record


async def _lease_while_the_stop_waits(
    world: World, sup: Supervisor, target: RuntimeTarget, command: WorkspaceCommand,
    record: ServiceRecord, ws: str, *, fire_after: float,
) -> tuple[str, Any]:  # fmt: skip
    """Hold the identity's lock; queue a second run's start (a reuse that leases it) first,
    then release the first run (whose stop then waits behind the start); let go of the lock."""
    second = world.run_started(ws, agent="agent-2")
    async with sup.locks.hold(instance_lock_key(record)):
        reuse = asyncio.create_task(start_service(sup, target, command, run_id=second,
                                                  agent_id="agent-2", lease=True))  # fmt: skip
        await asyncio.sleep(0.1)  # the start now waits for the lock
        await _released(world, sup, _first_run(record), ws)
        await asyncio.sleep(fire_after)  # the stop (or its timer) now waits behind the start
    started = await asyncio.wait_for(reuse, 10)
    return second, started


def _first_run(record: ServiceRecord) -> str:
    (run,) = record.lease_run_ids
    return run


async def _settled(sup: Supervisor) -> None:
    """Let every background stop and timer of the supervisor finish."""
    for _ in range(50):
        running = sup.background.running()
        tasks = [t for t in running if not t.get_name().startswith("watch-")]
        if not tasks:
            return
        await asyncio.wait(tasks, timeout=10)


async def test_a_run_leasing_the_service_while_its_release_stop_waits_keeps_it_running(
    sup: Supervisor, world: World, workdir: Path
) -> None:
    spec = ServiceSpec(name="api", command=SLEEPER, stop_policy=StopPolicy(type="on_run_finish"))
    target, command = _target(world, workdir, spec)
    ws = str(target.execution_workspace_id)
    first = world.run_started(ws)
    started = await start_service(sup, target, command, run_id=first, agent_id="agent-1",
                                  lease=True)  # fmt: skip
    record = started.record

    second, reused = await _lease_while_the_stop_waits(
        world, sup, target, command, record, ws, fire_after=0.2
    )
    await _settled(sup)

    assert reused.reused
    assert reused.record.id == record.id
    current = sup.app.service_record(None, record.id)
    assert (current.status, current.lease_run_ids) == ("running", (second,))
    assert proc_start_time(record.pid or 0) == record.process_start_time


async def test_a_run_leasing_the_service_while_its_idle_stop_waits_keeps_it_running(
    sup: Supervisor, world: World, workdir: Path
) -> None:
    spec = ServiceSpec(name="db", command=SLEEPER,
                       stop_policy=StopPolicy(type="idle_timeout", idle_seconds=1))  # fmt: skip
    target, command = _target(world, workdir, spec)
    ws = str(target.execution_workspace_id)
    first = world.run_started(ws)
    record = (await start_service(sup, target, command, run_id=first, agent_id="agent-1",
                                  lease=True)).record  # fmt: skip

    # The idle timer (1 s) fires while the second run's start holds the lock.
    second, reused = await _lease_while_the_stop_waits(
        world, sup, target, command, record, ws, fire_after=1.5
    )
    await _settled(sup)

    assert reused.reused
    current = sup.app.service_record(None, record.id)
    assert (current.status, current.lease_run_ids) == ("running", (second,))
    assert proc_start_time(record.pid or 0) == record.process_start_time
    assert record.id not in sup.idle_timers  # leased: nothing is armed until it is released


async def test_a_stop_leaves_alone_a_group_whose_leader_is_not_the_recorded_wrapper(
    sup: Supervisor, world: World, workdir: Path
) -> None:
    target, _command = _target(world, workdir, ServiceSpec(name="web", command=SLEEPER))
    # A process of someone else, leader of its own group, whose pid the ended wrapper once had.
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        started_at = proc_start_time(stranger.pid)
        assert started_at is not None
        service_id = sup.app.begin_start(target, service_name="web", command=SLEEPER,
                                         cwd=str(workdir), workspace_command_id="service:web",
                                         service_index=0)  # fmt: skip
        sup.app.mark_spawned(service_id, pid=stranger.pid, pgid=stranger.pid,
                             process_start_time=started_at - 5,
                             wrapper_start_time=started_at - 7)  # fmt: skip
        record = sup.app.mark_running(service_id)
        assert record.wrapper_start_time == started_at - 7

        stopped = await stop_instance(sup, record, reason="manual stop")

        assert stopped.record.status == "stopped"
        assert stranger.poll() is None  # not ours: never signalled
        assert proc_start_time(stranger.pid) == started_at
    finally:
        stranger.kill()
        stranger.wait()


async def test_a_spawned_service_records_its_wrappers_start_time(
    sup: Supervisor, world: World, workdir: Path
) -> None:
    target, command = _target(world, workdir, ServiceSpec(name="web", command=SLEEPER))

    record = (await start_service(sup, target, command)).record

    assert record.pgid is not None
    assert record.wrapper_start_time is not None
    assert record.wrapper_start_time == proc_start_time(record.pgid)


async def test_a_stop_after_the_command_crashed_records_the_crash(
    sup: Supervisor, world: World, workdir: Path
) -> None:
    flag = workdir / "crash.flag"
    crash = f"while [ ! -f {flag} ]; do sleep 0.05; done; echo 'boom'; exit 3"
    target, command = _target(world, workdir, ServiceSpec(name="crashy", command=crash))
    record = (await start_service(sup, target, command)).record
    # No watcher records the end first: the stop is the first to look.
    watcher = sup.watched.pop(record.id)
    watcher.cancel()
    flag.touch()
    run_dir = Path(record.run_dir or "")
    for _ in range(100):
        if read_status(run_dir) is not None:
            break
        await asyncio.sleep(0.05)
    assert str(read_status(run_dir)) == "exit 3"

    stopped = await stop_instance(sup, record, reason="manual stop")

    ended = stopped.record
    assert (ended.status, ended.exit_code, ended.exit_signal) == ("failed", 3, None)
    assert ended.last_error == "service process exited (exit 3)"
    assert ended.stop_reason is None
    assert "boom" in (ended.last_output or "")
