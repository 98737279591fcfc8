"""Replay and publication: read models rebuilt from the store equal the live ones; every stored
event maps to its public contract (or stays private) from the stored event alone, as the relay
reads it; no output or environment leaves in an event; long-lived aggregates snapshot."""

from __future__ import annotations

from typing import Any

import msgspec
from state_world import ACME, DB, WEB, World, make_app, runtime_of

from contracts.events import AnyEvent
from contracts.subjects import event_subject
from contracts.workspace_config import ExecutionWorkspaceConfig
from eventstore import verify_replay
from eventstore.publication import build_message
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.publishing import to_contract

SECRET_OUTPUT = "DATABASE_URL=postgres://user:hunter2@db/app"


def _narrative(app: RuntimeSupervisorApplication, world: World) -> dict[str, str]:
    """Every kind of fact the supervisor records, once or more."""
    pw = world.project_workspace(runtime_of(WEB, DB))
    issue = world.issue()
    config = ExecutionWorkspaceConfig(runtime_provision_command="pnpm install")
    ws = world.workspace(pw, issue, config=config)
    run = world.run_started(ws, issue)
    target = world.target(ws=ws)
    op = app.start_operation(target, phase="workspace_provision", command="pnpm install", cwd="/w")
    app.provisioning_started(target, operation_id=op, command="pnpm install")
    app.finish_operation(op, status="succeeded", exit_code=0, stdout=SECRET_OUTPUT.encode())
    app.provisioning_succeeded(target, operation_id=op)
    app.record_desired(target, "running", {"0": "running", "1": "running"})
    web = world.start(target, "web", port=41000, run=False, lease_run_ids=(run,))
    app.mark_spawned(web, pid=10, pgid=9, process_start_time=100)
    app.mark_running(web, url="http://127.0.0.1:41000")
    app.set_health(web, "unhealthy")
    app.touch(web)
    db = world.start(target, "db", index=1, port=41001, run=False)
    app.mark_start_failed(db, error="exited before readiness", exit_code=1,
                          last_output=SECRET_OUTPUT)  # fmt: skip
    adopted = world.start(target, "db", index=1, port=41002)
    app.mark_adopted(adopted, pid=11)
    app.acquire_lease(adopted, run)
    app.mark_failed(adopted, error="killed by signal 9", exit_signal=9, last_output=SECRET_OUTPUT)
    world.run_finished(run, "succeeded", ws)
    app.mark_stopped(web, stop_reason="run_finished", exit_signal=15, last_output=SECRET_OUTPUT)
    app.provisioning_failed(target, operation_id=None, error="exit 1")
    world.issue_status(issue, "in_progress", "done")
    world.ws_archive(ws, 1)
    world.ws_archived(ws, 1)
    return {"ws": ws, "pw": pw, "web": web}


def test_read_models_rebuilt_from_the_store_equal_the_live_ones(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    _narrative(app, world)
    report = verify_replay(RuntimeSupervisorApplication(service="supervisor"), app)
    assert report.differences == []
    assert report.ok
    assert report.notifications_replayed == app.last_notification_id()
    assert {"copies", "services", "runtimes", "operations", "services_by_run"} <= set(
        report.read_models
    )
    # The comparison sees a drift in any model (a replay check that could never fail is none).
    some = next(iter(app.services.values()))
    some.status = "running"
    app.services_by_target.clear()
    drifted = verify_replay(RuntimeSupervisorApplication(service="supervisor"), app)
    assert not drifted.ok
    assert any(".status" in d or "['status']" in d for d in drifted.differences)
    assert any(d.startswith("services_by_target") for d in drifted.differences)


def test_every_stored_event_publishes_from_the_store_alone_without_output(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    ids = _narrative(app, world)
    published: list[Any] = []
    private: set[str] = set()
    for notification in app.recorder.select_notifications(start=0, limit=10_000):
        stored = app.mapper.to_domain_event(notification)  # as the relay reads it
        contract = to_contract(stored)
        if contract is None:
            private.add(type(stored).__qualname__)
            continue
        message = build_message(to_contract, stored, service="supervisor",
                                notification_id=notification.id, origin="x")  # fmt: skip
        assert message is not None
        tag = type(contract).__struct_config__.tag
        assert message.subject == event_subject(tag, "supervisor")
        assert msgspec.json.decode(message.payload, type=AnyEvent) == contract
        assert SECRET_OUTPUT not in message.payload.decode()
        assert contract.company_id == ACME
        published.append(contract)
    tags = {type(c).__struct_config__.tag for c in published}
    assert tags == {
        "runtime_service.starting.v1",
        "runtime_service.started.v1",
        "runtime_service.start_failed.v1",
        "runtime_service.stopped.v1",
        "runtime_service.failed.v1",
        "runtime_service.adopted.v1",
        "runtime_service.lease_acquired.v1",
        "runtime_service.lease_released.v1",
        "runtime_service.health_changed.v1",
        "runtime_service.desired_state_changed.v1",
        "runtime_provisioning.started.v1",
        "runtime_provisioning.succeeded.v1",
        "runtime_provisioning.failed.v1",
    }
    assert private == {
        "UpstreamCopy.Copied",
        "UpstreamCopy.Updated",
        "RuntimeService.Spawned",
        "RuntimeService.Touched",
        "WorkspaceRuntime.Registered",
        "SupervisorOperation.Began",
        "SupervisorOperation.Finished",
    }
    # Later events of an instance still name its target and service, from the stored event.
    started = next(
        c for c in published if type(c).__struct_config__.tag == "runtime_service.started.v1"
    )
    assert (started.execution_workspace_id, started.project_workspace_id) == (ids["ws"], ids["pw"])
    assert (started.service_name, started.port, started.pid) == ("web", 41000, 10)
    assert started.url == "http://127.0.0.1:41000"
    released = [c for c in published
                if type(c).__struct_config__.tag == "runtime_service.lease_released.v1"]  # fmt: skip
    assert [c.lease_run_ids for c in released] == [[], []]
    stopped = next(c for c in published
                   if type(c).__struct_config__.tag == "runtime_service.stopped.v1")  # fmt: skip
    assert (stopped.stop_reason, stopped.exit_signal) == ("run_finished", 15)
    # The cause travels: the run's end released the leases, acting for that run.
    assert all(c.actor.type == "system" for c in released)


def test_a_long_lived_instance_is_snapshotted_and_loads_the_same(world: World) -> None:
    app = make_app(world.clock)
    world = World(app, world.clock)
    target = world.target(ws=world.workspace(None))
    web = world.start(target, port=41000)
    for _ in range(120):
        world.clock.advance(1)
        app.touch(web)
    assert app.snapshots is not None
    assert list(app.snapshots.get(app.services[web].id))  # taken at version 100
    loaded = app.load(web)
    assert loaded.version == app.services[web].version == 122
    assert loaded.record() == app.services[web].record()
    # And the rebuilt read models agree.
    assert verify_replay(RuntimeSupervisorApplication(service="supervisor"), app).ok
