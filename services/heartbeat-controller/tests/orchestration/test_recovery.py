"""Restart recovery: every run left ``running`` gets a task and ends (or is re-attached); queued
runs are dispatched again. A first orchestration claims runs and "dies" (its run tasks do
nothing); a second one recovers them from the same store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conftest import Harness
from fakes import finished_event

from contracts.slots import AdapterLaunched, RunSlot, SlotGrant
from eventstore import acting, system_cause
from heartbeat_controller.orchestration.context import Orchestration
from heartbeat_controller.orchestration.dispatcher import Dispatcher
from heartbeat_controller.orchestration.recovery import recover_runs


async def _nothing(orch: Orchestration, work: object) -> None:
    """A run task of a controller that died right after claiming."""


async def _claimed(h: Harness, *, slot: bool = False, launched: bool = False) -> str:
    """A run left ``running`` by a dead controller (slot granted, adapter launched)."""
    agent = await h.agent(f"a-{len(h.world.calls)}-{datetime.now(UTC).timestamp()}")
    run_id = await h.wake(agent)
    dead = Dispatcher(h.make_orchestration(), body=_nothing)
    with acting(system_cause("heartbeat-controller", "test")):
        assert run_id in await dead.dispatch()
        if slot:
            grant = SlotGrant(slot_id=f"slot-{run_id}", type="local_stdio", index=0,
                              contained=False, sandbox="none")  # fmt: skip
            await h.store(h.app.record_slot, run_id, grant)
        if launched:
            now = datetime.now(UTC)
            done = AdapterLaunched(slot_id=f"slot-{run_id}", run_id=run_id, pid=1, pgid=1,
                                   started_at=now, deadline=now + timedelta(seconds=60))  # fmt: skip
            await h.store(h.app.record_launch, run_id, done)
    assert (await h.run(run_id)).status == "running"
    return run_id


def _slot(run_id: str, state: str, **fields: object) -> RunSlot:
    return RunSlot(slot_id=f"slot-{run_id}", run_id=run_id, type="local_stdio",
                   state=state, started_at=datetime.now(UTC), **fields)  # type: ignore[arg-type]  # fmt: skip


async def test_runs_never_launched_end_process_detached_with_their_slot_released(
    idle: Harness,
) -> None:
    h = idle
    no_slot = await _claimed(h)
    granted = await _claimed(h, slot=True)
    h.world.script.slots[granted] = _slot(granted, "granted")
    recovered = await recover_runs(h.orch, h.dispatcher)
    assert set(recovered) == {no_slot, granted}
    for run_id in (no_slot, granted):
        view = await h.finished(run_id)
        assert view.status == "failed"
        assert view.error_code == "process_detached"
    assert h.world.of(no_slot) == ["get_run_slot"]
    assert h.world.of(granted) == ["get_run_slot", "release_slot"]


async def test_a_run_whose_adapter_finished_meanwhile_is_collected(idle: Harness) -> None:
    h = idle
    run_id = await _claimed(h, slot=True, launched=True)
    h.world.script.slots[run_id] = _slot(run_id, "finished", end="exited", exit_code=0)
    await recover_runs(h.orch, h.dispatcher)
    view = await h.finished(run_id)
    assert view.status == "succeeded"
    assert h.world.of(run_id) == ["get_run_slot", "release_slot"]
    assert (await h.stages(run_id))[-1] == "cleanup"


async def test_a_run_whose_end_event_arrives_at_restart_uses_it(idle: Harness) -> None:
    h = idle
    run_id = await _claimed(h, slot=True, launched=True)
    h.world.script.slots[run_id] = _slot(run_id, "finished", end="exited", exit_code=2)
    await h.deliver(finished_event(run_id, "a", "exited", 2))  # before recovery opens the run
    await recover_runs(h.orch, h.dispatcher)
    view = await h.finished(run_id)
    assert view.status == "failed"
    assert view.error_code == "adapter_failed"
    assert view.exit_code == 2
    assert view.stdout_excerpt == "out"


async def test_a_still_running_adapter_is_reattached_and_its_end_awaited(idle: Harness) -> None:
    h = idle
    run_id = await _claimed(h, slot=True, launched=True)
    h.world.script.slots[run_id] = _slot(run_id, "running")
    await recover_runs(h.orch, h.dispatcher)
    assert (await h.run(run_id)).status == "running"
    assert h.orch.channels.get(run_id) is not None  # a task waits for it
    h.world.end(run_id, "a", "exited", 0)
    view = await h.finished(run_id)
    assert view.status == "succeeded"
    assert h.world.of(run_id) == ["get_run_slot", "release_slot"]


async def test_a_reattached_run_can_still_be_cancelled(idle: Harness) -> None:
    h = idle
    run_id = await _claimed(h, slot=True, launched=True)
    h.world.script.slots[run_id] = _slot(run_id, "running")
    await recover_runs(h.orch, h.dispatcher)
    await h.cancel(run_id)
    view = await h.finished(run_id)
    assert view.status == "cancelled"
    assert h.world.of(run_id) == ["get_run_slot", "kill", "release_slot"]


async def test_queued_runs_are_dispatched_again_after_recovery(idle: Harness) -> None:
    h = idle
    agent = await h.agent("queued")
    run_id = await h.wake(agent)
    assert (await h.run(run_id)).status == "queued"
    assert await recover_runs(h.orch, h.dispatcher) == []
    h.dispatcher.start()
    assert (await h.finished(run_id)).status == "succeeded"
