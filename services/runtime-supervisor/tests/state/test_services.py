"""Runtime service instances: the start recorded before the bind with its port reserved, port
conflicts naming the owner, the process's life and end (DECISIONS 7, 8), health, reuse, leases
and release_run (reference §6.6-§6.7, case 54), and the services a target shows (reference §6.9)."""

from __future__ import annotations

import pytest
from state_world import ACME, OTHER, WEB, World, runtime_of

from contracts.workspace_config import ExecutionWorkspaceConfig, StopPolicy
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.domain import NotFoundError, PortConflictError, StateConflictError


def test_a_start_is_recorded_starting_with_its_port_reserved_before_the_bind(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    ws = world.workspace(None)
    target = world.target(ws=ws)
    service_id = app.begin_start(
        target,
        service_name="web",
        command="python3 -m http.server $PORT",
        cwd="/worktrees/ACME-1",
        port=41000,
        workspace_command_id="service:web",
        service_index=0,
        lifecycle="shared",
        scope_type="execution_workspace",
        scope_id=ws,
        reuse_key="k-web",
        stop_policy={"type": "idle_timeout", "idleSeconds": 60},
        run_dir=f"/home/.clipyard/runtime/{ws}",
        started_by_run_id="run-1",
        owner_agent_id="agent-1",
        lease_run_ids=("run-1", "run-1"),
    )
    record = app.service_record(ACME, service_id)
    assert (record.status, record.health_status, record.live) == ("starting", "unknown", True)
    assert (record.port, record.pid, record.started_at) == (41000, None, None)
    assert record.lease_run_ids == ("run-1",)
    assert record.stop_policy == {"type": "idle_timeout", "idleSeconds": 60}
    assert record.created_at == world.clock.now
    assert app.reserved_ports() == {41000: f"execution workspace {ws} (service web)"}
    assert [s.id for s in app.live_services()] == [service_id]
    # Spawned: the process facts are known before readiness; still starting.
    world.clock.advance(1)
    spawned = app.mark_spawned(service_id, pid=4242, pgid=4241, process_start_time=991)
    assert (spawned.status, spawned.pid, spawned.pgid, spawned.process_start_time) == (
        "starting",
        4242,
        4241,
        991,
    )
    world.clock.advance(1)
    running = app.mark_running(service_id, url="http://127.0.0.1:41000")
    assert (running.status, running.health_status) == ("running", "healthy")
    assert (running.pid, running.pgid, running.url) == (4242, 4241, "http://127.0.0.1:41000")
    assert running.started_at == running.last_used_at == world.clock.now
    with pytest.raises(NotFoundError):
        app.service_record(OTHER, service_id)


def test_a_port_held_by_a_live_service_is_refused_naming_its_owner(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    first = world.target(ws=world.workspace(None))
    second = world.target(ws=world.workspace(None))
    pw = world.target(pw=world.project_workspace())
    holder = world.start(first, port=41500, run=False)  # starting already reserves it
    with pytest.raises(PortConflictError) as caught:
        world.start(second, port=41500)
    error = caught.value
    assert (error.code, error.status) == ("port_conflict", 409)
    assert first.execution_workspace_id in str(error)
    assert error.details == {
        "port": 41500,
        "runtimeServiceId": holder,
        "serviceName": "web",
        "conflictingExecutionWorkspaceId": first.execution_workspace_id,
    }
    # The same target cannot bind it twice either.
    with pytest.raises(PortConflictError, match="this workspace's"):
        world.start(first, "api", port=41500)
    app.mark_running(holder, pid=1, pgid=1, process_start_time=1)
    with pytest.raises(PortConflictError):
        world.start(pw, port=41500)
    # A project workspace's service is named by its project workspace.
    pw_holder = world.start(pw, port=41600)
    with pytest.raises(PortConflictError) as by_pw:
        world.start(second, port=41600)
    assert by_pw.value.details["conflictingProjectWorkspaceId"] == pw.project_workspace_id
    # Ended, the port is free again: stopped, failed, or failed at start.
    app.mark_stopped(holder, stop_reason="stop", exit_signal=15)
    app.mark_failed(pw_holder, exit_signal=9)
    moved = world.start(second, port=41500, run=False)
    app.mark_start_failed(moved, error="service process exited before readiness", exit_code=1)
    assert app.reserved_ports() == {}
    assert world.start(second, port=41600)
    assert app.port_owners()[41600].target_key == second.key


def test_no_start_in_a_closing_or_archived_workspace(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    ws = world.workspace(None)
    world.ws_archive(ws, 1)
    with pytest.raises(StateConflictError, match="being archived"):
        world.start(world.target(ws=ws))
    world.ws_archived(ws, 1)
    with pytest.raises(StateConflictError, match="archived"):
        world.start(world.target(ws=ws))
    assert app.live_services() == []


def test_an_end_is_recorded_once_with_its_exit_status_and_last_output(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target = world.target(ws=world.workspace(None))
    service_id = world.start(target)
    world.clock.advance(5)
    output = "x" * 10_000 + "killed"
    failed = app.mark_failed(service_id, error="killed by signal 9", exit_signal=9,
                             last_output=output)  # fmt: skip
    assert (failed.status, failed.health_status, failed.live) == ("failed", "unhealthy", False)
    assert (failed.exit_signal, failed.exit_code, failed.stopped_at) == (9, None, world.clock.now)
    assert failed.last_output is not None
    assert len(failed.last_output) == 4096
    assert failed.last_output.endswith("killed")
    version = app.services[service_id].version
    # The stop that raced the watcher, a late readiness, an adoption: nothing changes.
    assert app.mark_stopped(service_id, stop_reason="stop").status == "failed"
    assert app.mark_running(service_id).status == "failed"
    assert app.mark_adopted(service_id, pid=5).status == "failed"
    assert app.mark_start_failed(service_id, error="late").last_error == "killed by signal 9"
    assert app.services[service_id].version == version
    with pytest.raises(NotFoundError):
        app.mark_stopped("3f1e0e55-0000-4000-8000-000000000000", stop_reason="stop")


def test_a_start_failure_is_failed_and_unhealthy_with_the_reason(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target = world.target(ws=world.workspace(None))
    service_id = world.start(target, port=41001, run=False)
    record = app.mark_start_failed(service_id, error="service process exited before readiness",
                                   exit_code=3, last_output="boom")  # fmt: skip
    assert (record.status, record.health_status) == ("failed", "unhealthy")
    assert (record.exit_code, record.last_error, record.last_output) == (
        3,
        "service process exited before readiness",
        "boom",
    )


def test_adoption_keeps_a_live_instance_running_without_a_restart(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target = world.target(ws=world.workspace(None))
    running = world.start(target, port=41002)
    starting = world.start(target, "api", index=1, run=False)
    app.mark_spawned(starting, pid=77, pgid=76, process_start_time=5)
    world.clock.advance(30)
    adopted = app.mark_adopted(running)
    assert (adopted.status, adopted.adopted_at, adopted.port) == ("running", world.clock.now, 41002)
    # One caught between spawn and readiness is running again too, with its recorded pid.
    caught = app.mark_adopted(starting)
    assert (caught.status, caught.pid, caught.started_at) == ("running", 77, world.clock.now)


def test_health_changes_are_recorded_only_when_they_change(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target = world.target(ws=world.workspace(None))
    service_id = world.start(target)
    version = app.services[service_id].version
    assert app.set_health(service_id, "healthy").health_status == "healthy"
    assert app.services[service_id].version == version
    assert app.set_health(service_id, "unhealthy").health_status == "unhealthy"
    assert app.services[service_id].version == version + 1


def test_find_shared_returns_the_latest_healthy_running_instance_of_a_reuse_key(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target = world.target(ws=world.workspace(None))
    assert app.find_shared(None) is None
    old = world.start(target, reuse_key="key-1")
    world.clock.advance(1)
    new = world.start(target, "web2", index=1, reuse_key="key-1")
    other = world.start(target, "db", index=2, reuse_key="key-2", run=False)
    assert app.find_shared("key-1").id == new  # type: ignore[union-attr]
    app.set_health(new, "unhealthy")
    assert app.find_shared("key-1").id == old  # type: ignore[union-attr]
    app.mark_stopped(old, stop_reason="stop")
    assert app.find_shared("key-1") is None
    assert app.find_shared("key-2") is None  # starting is not ready to share
    app.mark_running(other)
    assert app.find_shared("key-2").id == other  # type: ignore[union-attr]


def test_leases_and_release_run(app: RuntimeSupervisorApplication, world: World) -> None:
    target = world.target(ws=world.workspace(None))
    ephemeral = world.start(target, "preview", index=0, lifecycle="ephemeral")
    shared = world.start(target, "web", index=1)
    world.clock.advance(10)
    leased = app.acquire_lease(ephemeral, "run-1")
    assert leased.lease_run_ids == ("run-1",)
    assert leased.last_used_at == world.clock.now
    version = app.services[ephemeral].version
    assert app.acquire_lease(ephemeral, "run-1").lease_run_ids == ("run-1",)
    assert app.services[ephemeral].version == version  # a second acquisition changes nothing
    app.acquire_lease(shared, "run-1")
    app.acquire_lease(shared, "run-2")
    world.clock.advance(10)
    released = app.release_run("run-1")
    assert [(r.id, r.lease_run_ids, unleased) for r, unleased in released] == sorted(
        [(ephemeral, (), True), (shared, ("run-2",), False)]
    )
    assert all(r.last_used_at == world.clock.now for r, _ in released)
    assert app.release_run("run-1") == []
    record, unleased = app.release_lease(shared, "run-2")
    assert (record.lease_run_ids, unleased) == ((), True)
    assert app.services_by_run == {}
    # An ended instance cannot be leased.
    app.mark_stopped(ephemeral, stop_reason="run_finished")
    with pytest.raises(StateConflictError):
        app.acquire_lease(ephemeral, "run-3")
    assert app.touch(shared).last_used_at == world.clock.now


def test_a_target_shows_live_instances_and_the_last_end_of_each_service(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target = world.target(ws=world.workspace(None))
    db = world.start(target, "db", index=1)
    first_web = world.start(target, "web", index=0)
    app.mark_failed(first_web, exit_code=1)
    world.clock.advance(1)
    second_web = world.start(target, "web", index=0, run=False)
    app.mark_start_failed(second_web, error="timed out after 30s")
    shown = app.services_of(target)
    assert [(s.service_name, s.id) for s in shown] == [("web", second_web), ("db", db)]
    world.clock.advance(1)
    third_web = world.start(target, "web", index=0)
    assert [s.id for s in app.services_of(target)] == [third_web, db]
    history = app.services_of(target, include_history=True)
    assert [s.id for s in history] == [first_web, second_web, third_web, db]


def test_a_shared_workspace_without_its_own_config_sees_the_project_workspaces_services(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    pw = world.project_workspace(runtime_of(WEB))
    shared_ws = world.workspace(pw, mode="shared_workspace", cwd="/repos/acme")
    other_shared = world.workspace(pw, mode="shared_workspace", cwd="/repos/acme")
    isolated = world.workspace(pw, mode="isolated_workspace")
    pw_target, shared, isolated_target = (
        world.target(pw=pw),
        world.target(ws=shared_ws),
        world.target(ws=isolated),
    )
    from_pw = world.start(pw_target, "web", scope_type="project_workspace", scope_id=pw)
    from_shared = world.start(
        world.target(ws=other_shared), "api", index=1, scope_type="project_workspace", scope_id=pw
    )
    own = world.start(shared, "tunnel", index=2, scope_type="execution_workspace")
    in_worktree = world.start(
        isolated_target, "web", scope_type="project_workspace", scope_id=pw, cwd="/worktrees/x"
    )
    assert [s.id for s in app.services_of(shared)] == [from_pw, from_shared, own]
    assert [s.id for s in app.services_of(shared, include_inherited=False)] == [own]
    assert [s.id for s in app.services_of(pw_target)] == [from_pw, from_shared]
    # An isolated worktree's services are its own, and nobody else's.
    assert [s.id for s in app.services_of(isolated_target)] == [in_worktree]
    # With a config of its own, the shared workspace no longer inherits.
    world.ws_config(shared_ws, ExecutionWorkspaceConfig(workspace_runtime=runtime_of(WEB)))
    assert [s.id for s in app.services_of(world.target(ws=shared_ws))] == [own]


def test_a_start_checks_the_target_as_it_is_now_and_keeps_a_stop_policy_value(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    ws = world.workspace(None)
    read_earlier = world.target(ws=ws)
    service_id = world.start(read_earlier, stop_policy=StopPolicy(type="idle_timeout",
                                                                  idle_seconds=90))  # fmt: skip
    assert app.service_record(ACME, service_id).stop_policy == {
        "type": "idle_timeout",
        "idleSeconds": 90,
    }
    world.ws_archive(ws, 1)  # arrives while the caller still holds its old read
    with pytest.raises(StateConflictError, match="being archived"):
        world.start(read_earlier, "api", index=1)
    pw = world.project_workspace()
    pw_target = world.target(pw=pw)
    world.pw_deleted(pw)
    with pytest.raises(NotFoundError):
        world.start(pw_target)


def test_no_lease_for_a_finished_run_or_another_companys(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    ws = world.workspace(None)
    target = world.target(ws=ws)
    shared = world.start(target, "web", index=0)
    finished = world.run_started(ws)
    world.run_finished(finished, status="failed", ws=ws)
    foreign = world.run_started(None, company=OTHER)

    with pytest.raises(StateConflictError, match="has finished"):
        app.acquire_lease(shared, finished)
    with pytest.raises(StateConflictError, match="has finished"):
        world.start(target, "api", index=1, lease_run_ids=(finished,))
    with pytest.raises(NotFoundError):
        app.acquire_lease(shared, foreign)
    assert app.services_by_run == {}
    assert [s.service_name for s in app.services_of(target)] == ["web"]
    # A run not heard of yet may hold it; its run.finished releases it.
    assert app.acquire_lease(shared, "run-unheard").lease_run_ids == ("run-unheard",)
    world.run_finished("run-unheard", ws=ws)
    assert app.service_record(ACME, shared).lease_run_ids == ()
