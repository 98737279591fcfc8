"""Worker nodes sharing one supervisor store (docs/scale-out.md, "Worker nodes"): every service,
operation and slot a supervisor records names its node, and each supervisor's sweeps, port
reservations, reuse and slot positions cover its own node's records only."""

from __future__ import annotations

from state_world import ACME, World

from contracts.nodes import NodeCapacity
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.orchestration.adoption import fail_interrupted

CAPACITY = NodeCapacity(slots=1, port_range="1-2", disk_free_bytes=1, cpus=1, memory_bytes=1)


def _as(app: RuntimeSupervisorApplication, node: str | None) -> RuntimeSupervisorApplication:
    app.node_id = node
    return app


def _slot(app: RuntimeSupervisorApplication, run: str) -> int | None:
    info = app.acquire_slot(
        ACME,
        run_id=run,
        agent_id="agent-1",
        adapter_type="process",
        trusted=True,
        capacity=1,
        sandbox=None,
        sandbox_detail="",
        ttl=60,
    )
    return info.index


def test_each_node_sees_and_reserves_only_its_own_records(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    a_target = world.target(ws=world.workspace(None))
    b_target = world.target(ws=world.workspace(None))
    app.node_id = "a"
    on_a = world.start(a_target, port=41000, reuse_key="shared-web")
    app.node_id = "b"
    on_b = world.start(b_target, port=41000, reuse_key="shared-web")
    # Node b took port 41000 too: a port is reserved on its own host only.
    assert app.service_record(ACME, on_b).node_id == "b"
    assert [s.id for s in _as(app, "a").live_services()] == [on_a]
    assert app.port_owners()[41000].id == on_a  # node b's holder of it is not node a's
    assert app.find_shared("shared-web").id == on_a  # never a service on another host
    assert [s.id for s in _as(app, "b").live_services()] == [on_b]
    assert app.find_shared("shared-web").id == on_b
    # A replay or an audit tool (no node): everything.
    assert {s.id for s in _as(app, None).live_services()} == {on_a, on_b}


def test_slot_positions_are_counted_per_node(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    world.run_started(None)
    assert _slot(_as(app, "a"), "run-a") == 0
    assert _slot(_as(app, "b"), "run-b") == 0  # node b's own pool of one
    assert [s.run_id for s in app.held_slots()] == ["run-b"]
    assert app.slots_in_use() == {"local_stdio": 1, "remote_http": 0}


def test_a_restarted_supervisor_fails_only_its_own_nodes_interrupted_operations(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    target = world.target(ws=world.workspace(None))
    mine = _as(app, "a").start_operation(target, phase="job", command="make", cwd="/w")
    theirs = _as(app, "b").start_operation(target, phase="job", command="make", cwd="/w")
    assert fail_interrupted(_as(app, "a")) == 1
    assert app.operations[mine].status == "failed"
    assert app.operations[theirs].status == "running"
    assert (app.operations[mine].node_id, app.operations[theirs].node_id) == ("a", "b")


def test_records_from_before_worker_nodes_are_the_first_registered_nodes(
    app: RuntimeSupervisorApplication, world: World
) -> None:
    app.node_id = None
    legacy = world.start(world.target(ws=world.workspace(None)), port=41001)
    assert app.service_record(ACME, legacy).node_id is None
    # No node registered yet: whichever node serves them (the only one there was).
    assert [s.id for s in _as(app, "b").live_services()] == [legacy]
    _as(app, "a").register_node("a", instance="sup-a", version="1", capacity=CAPACITY)
    _as(app, "b").register_node("b", instance="sup-b", version="1", capacity=CAPACITY)
    assert [s.id for s in _as(app, "a").live_services()] == [legacy]
    assert _as(app, "b").live_services() == []  # a node that joined later never takes them
