"""A run through stages 2-6 with the real application and dispatcher, the ports faked: the
stages in order, the adapter's environment, cleanup on every failure path, cancel, timeout, and
one run per workspace at a time."""

from __future__ import annotations

import asyncio

import pytest
from conftest import Harness

from heartbeat_controller.orchestration.ports import PortError

SIX = ["wakeup", "workspace_resolution", "slot_acquisition", "adapter_launch",
       "result_collection", "cleanup"]  # fmt: skip


async def test_a_run_with_an_issue_goes_through_the_six_stages_in_order(h: Harness) -> None:
    agent = await h.agent(trusted=False)
    await h.issue("i-1", assignee=agent)
    run_id = await h.wake(agent, "i-1", reason="go", payload={"k": 1})
    view = await h.finished(run_id)
    assert view.status == "succeeded", view
    assert view.exit_code == 0
    assert view.result == {"ok": True}
    assert view.usage == {"tokens": 1}
    assert await h.stages(run_id) == SIX
    assert h.world.of(run_id) == ["realize", "ensure_services", "acquire_slot", "mint",
                                  "launch", "release_slot"]  # fmt: skip
    realize = next(m for what, rid, m in h.world.calls if what == "realize" and rid == run_id)
    assert realize.require_isolation is True
    assert realize.agent_id == agent
    assert realize.principal.actor.type == "system"
    assert realize.principal.run_id == run_id
    assert view.execution_workspace_id == "ws-i-1"


async def test_the_adapter_gets_the_api_environment_and_the_token_is_stored_nowhere(
    h: Harness,
) -> None:
    agent = await h.agent()
    await h.issue("i-2")
    run_id = await h.wake(agent, "i-2", reason="because", payload={"a": [1]})
    assert (await h.finished(run_id)).status == "succeeded"
    env = h.world.launch_env[run_id]
    token = f"secret-{run_id}"
    for prefix in ("CLIPYARD", "PAPERCLIP"):
        assert env[f"{prefix}_API_KEY"] == token
        assert env[f"{prefix}_API_URL"] == "http://api.test:9000"
        assert env[f"{prefix}_RUN_ID"] == run_id
        assert env[f"{prefix}_AGENT_ID"] == agent
        assert env[f"{prefix}_COMPANY_ID"] == "c-acme"
        assert env[f"{prefix}_TASK_ID"] == "i-2"
        assert env[f"{prefix}_WAKE_REASON"] == "because"
        assert env[f"{prefix}_WORKSPACE_ID"] == "ws-i-2"
        assert env[f"{prefix}_WAKE_PAYLOAD_JSON"] == '{"a":[1]}'
    assert env["MY_VAR"] == "1"
    mint = next(m for what, rid, m in h.world.calls if what == "mint" and rid == run_id)
    assert (
        55 <= (mint.expires_at - mint.expires_at.now(mint.expires_at.tzinfo)).total_seconds() <= 60
    )
    assert token.encode() not in await h.stored_bytes()


async def test_a_run_without_an_issue_has_no_workspace_and_no_services(h: Harness) -> None:
    agent = await h.agent()
    run_id = await h.wake(agent)
    assert (await h.finished(run_id)).status == "succeeded"
    assert h.world.of(run_id) == ["acquire_slot", "mint", "launch", "release_slot"]
    assert "CLIPYARD_TASK_ID" not in h.world.launch_env[run_id]
    assert await h.stages(run_id) == SIX


FAILURES = [
    ("realize_low_trust", "low_trust_violation", ["realize"]),
    ("realize_refused", "workspace_validation_failed", ["realize"]),
    ("services_failed", "runtime_services_failed", ["realize", "ensure_services"]),
    ("sandbox", "slot_unavailable", ["realize", "ensure_services", "acquire_slot"]),
    ("mint", "run_token_unavailable",
     ["realize", "ensure_services", "acquire_slot", "mint", "release_slot"]),
    ("launch", "adapter_launch_failed",
     ["realize", "ensure_services", "acquire_slot", "mint", "launch", "release_slot"]),
    ("exit_3", "adapter_failed",
     ["realize", "ensure_services", "acquire_slot", "mint", "launch", "release_slot"]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "code", "calls"), FAILURES)
async def test_every_failure_ends_through_cleanup(
    h: Harness, case: str, code: str, calls: list[str]
) -> None:
    s = h.world.script
    message = "set the project's executionWorkspacePolicy.defaultMode to isolated_workspace"
    if case == "realize_low_trust":
        s.realize = PortError("low_trust_violation", message, 422)
    elif case == "realize_refused":
        s.realize = PortError("not_found", "There is no issue i-3.", 404)
    elif case == "services_failed":
        s.services_error = PortError("start_failed", "web did not become ready", 500)
    elif case == "sandbox":
        s.slot_refusals = [PortError("sandbox_unavailable", "no slot users here", 422)]
    elif case == "mint":
        s.mint_error = PortError("service_unavailable", "api-gateway is not answering", 503)
    elif case == "launch":
        s.launch_error = PortError("launch_failed", "no such command", 422)
    else:
        s.exit_code = 3
    agent = await h.agent(trusted=False)
    await h.issue("i-3")
    run_id = await h.wake(agent, "i-3")
    view = await h.finished(run_id)
    assert (view.status, view.error_code) == ("failed", code), view
    if case == "realize_low_trust":
        assert view.error == message
    assert h.world.of(run_id) == calls
    stages = await h.stages(run_id)
    assert stages[-1] == "cleanup"
    assert stages[:2] == SIX[:2]
    assert stages == [s for s in SIX if s in stages]  # in order, none repeated
    assert h.world.running == {}


async def test_a_full_pool_is_retried_until_a_slot_is_granted(h: Harness) -> None:
    busy = PortError("slot_unavailable", "every local_stdio slot is in use", 409)
    h.world.script.slot_refusals = [busy, busy, busy]
    agent = await h.agent()
    run_id = await h.wake(agent)
    assert (await h.finished(run_id)).status == "succeeded"
    assert h.world.of(run_id) == ["acquire_slot"] * 4 + ["mint", "launch", "release_slot"]


async def test_a_run_over_its_timeout_is_killed_by_the_backstop(h: Harness) -> None:
    h.world.script.exit_code = None  # the adapter hangs, the supervisor never times it out
    agent = await h.agent(timeout_sec=1)
    run_id = await h.wake(agent)
    view = await h.finished(run_id, timeout=10)
    assert view.status == "timed_out"
    assert view.error_code == "timed_out"
    kill = next(m for what, rid, m in h.world.calls if what == "kill" and rid == run_id)
    assert kill.timed_out is True
    assert h.world.of(run_id)[-2:] == ["kill", "release_slot"]


async def test_a_supervisor_that_does_not_answer_the_kill_still_ends_the_run(h: Harness) -> None:
    h.world.script.exit_code = None
    h.world.script.kill_answers = False
    agent = await h.agent(timeout_sec=1)
    run_id = await h.wake(agent)
    view = await h.finished(run_id, timeout=10)
    assert view.status == "timed_out"
    assert "release_slot" in h.world.of(run_id)


async def test_cancel_before_the_launch_stops_at_the_stage_boundary(h: Harness) -> None:
    gate = asyncio.Event()
    h.world.script.realize_gate = gate
    agent = await h.agent()
    await h.issue("i-4")
    run_id = await h.wake(agent, "i-4")
    await h.until(run_id, lambda v: v.status == "running")
    await h.called(run_id, "realize")
    await h.cancel(run_id)
    gate.set()
    view = await h.finished(run_id)
    assert view.status == "cancelled"
    assert view.error_code == "cancelled"
    assert h.world.of(run_id) == ["realize"]
    assert (await h.stages(run_id))[-1] == "cleanup"


async def test_cancel_after_the_launch_kills_the_adapter(h: Harness) -> None:
    h.world.script.exit_code = None
    agent = await h.agent()
    run_id = await h.wake(agent)
    await h.until(run_id, lambda v: v.stage == "result_collection")
    await h.cancel(run_id)
    view = await h.finished(run_id)
    assert view.status == "cancelled"
    kill = next(m for what, rid, m in h.world.calls if what == "kill" and rid == run_id)
    assert kill.timed_out is False
    assert h.world.of(run_id)[-2:] == ["kill", "release_slot"]


async def test_a_queued_run_cancelled_never_starts(h: Harness) -> None:
    h.world.script.exit_code = None
    agent = await h.agent(max_runs=1)
    first = await h.wake(agent)
    await h.until(first, lambda v: v.stage == "result_collection")
    second = await h.wake(agent, reason="again")
    assert (await h.run(second)).status == "queued"
    assert (await h.cancel(second)).status == "cancelled"
    await h.cancel(first)
    await h.finished(first)
    assert h.world.of(second) == []


async def test_two_runs_on_one_workspace_never_overlap(h: Harness) -> None:
    h.world.script.run_for = 0.2

    def shared(command):  # type: ignore[no-untyped-def]
        from fakes import realize_result

        return realize_result("ws-shared", "c-acme", command.issue_id)

    h.world.script.realize = shared
    one, two = await h.agent("one"), await h.agent("two")
    await h.issue("i-5")
    await h.issue("i-6")
    first = await h.wake(one, "i-5")
    second = await h.wake(two, "i-6")
    views = [await h.finished(first), await h.finished(second)]
    assert [v.status for v in views] == ["succeeded", "succeeded"]
    assert h.world.overlaps == []
    launches = [rid for what, rid, _ in h.world.calls if what == "launch"]
    releases = [rid for what, rid, _ in h.world.calls if what == "release_slot"]
    order = [(w, rid) for w, rid, _ in h.world.calls if w in ("launch", "release_slot")]
    assert order == [("launch", launches[0]), ("release_slot", releases[0]),
                     ("launch", launches[1]), ("release_slot", releases[1])]  # fmt: skip


async def test_the_run_asks_for_its_services_with_what_the_realizer_answered(
    h: Harness,
) -> None:
    agent = await h.agent()
    await h.issue("i-4")
    run_id = await h.wake(agent, "i-4")
    assert (await h.finished(run_id)).status == "succeeded"
    (ensure,) = [m for what, rid, m in h.world.calls if what == "ensure_services" and rid == run_id]
    facts = ensure.realizer_facts
    # The supervisor waits until its copies have had these (the realizer's events may lag).
    assert (facts.workspace_config, facts.lifecycle_generation) == (None, 0)


async def test_a_supervisor_not_ready_for_the_services_is_asked_again_then_gives_up(
    h: Harness,
) -> None:
    behind = PortError("service_unavailable", "copies behind; retry in a moment", 503)
    h.world.script.services_refusals = [behind, behind]
    agent = await h.agent()
    await h.issue("i-5")
    first = await h.wake(agent, "i-5")
    assert (await h.finished(first)).status == "succeeded"
    assert h.world.of(first)[:4] == ["realize", "ensure_services", "ensure_services",
                                     "ensure_services"]  # fmt: skip
    # Three refusals in a row: the run fails, through cleanup, with the supervisor's message.
    h.world.script.services_refusals = [behind, behind, behind]
    second = await h.wake(agent, "i-5")
    view = await h.finished(second)
    assert (view.status, view.error_code) == ("failed", "runtime_services_failed"), view
    assert "retry in a moment" in (view.error or "")
    assert h.world.of(second) == ["realize"] + ["ensure_services"] * 3
