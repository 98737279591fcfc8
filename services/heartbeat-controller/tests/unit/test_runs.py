"""Runs: what starts when (queue order, the agent's limit, one run per workspace, in order),
workspace leases handed over in order, cancel of queued and running runs, an agent's delete."""

from __future__ import annotations

import pytest
from controller_world import (
    ADMIN,
    BOARD,
    OTHER_BOARD,
    Clock,
    World,
    acting_for,
    agent_principal,
    run_principal,
)

from contracts.agents import RunFilters
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.domain import NotFoundError, RunFinishedError
from servicekit.access import AccessDeniedError


def _status(app: HeartbeatControllerApplication, run_id: str) -> tuple[str, str]:
    run = app.get_run(BOARD, run_id)
    return run.status, run.stage


def test_a_claim_starts_the_run_on_its_issues_workspace(
    app: HeartbeatControllerApplication, world: World, clock: Clock
) -> None:
    agent_id = world.agent(trust_level="trusted")
    issue = world.issue(workspace="ws-1")
    accepted = world.wake(agent_id, issue, payload={"why": "tests"})
    [claim] = app.claim_runnable(clock.now)
    assert (claim.run_id, claim.issue_id, claim.workspace_id) == (accepted.run_id, issue, "ws-1")
    assert claim.agent.trusted
    assert claim.agent.adapter_config.command == ["python3", "agent.py"]
    assert claim.agent.adapter_config.timeout_sec == 60
    assert claim.payload == {"why": "tests"}
    assert _status(app, claim.run_id) == ("running", "workspace_resolution")
    assert app.workspace_holders == {"ws-1": claim.run_id}
    assert app.get_run(BOARD, claim.run_id).execution_workspace_id == "ws-1"
    assert app.claim_runnable(clock.now) == []


def test_two_wakes_on_one_workspace_never_run_together_and_keep_their_order(
    app: HeartbeatControllerApplication, world: World
) -> None:
    coder, reviewer = world.agent(name="coder"), world.agent(name="reviewer")
    first_issue, second_issue = world.issue(workspace="ws-1"), world.issue(workspace="ws-1")
    first = world.wake(coder, first_issue)
    second = world.wake(reviewer, second_issue)
    elsewhere = world.wake(reviewer, world.issue(workspace="ws-2"))
    # The reviewer's run on ws-2 starts beside the coder's on ws-1; its run on ws-1 waits.
    assert world.claim() == [first.run_id, elsewhere.run_id]
    assert _status(app, second.run_id) == ("queued", "wakeup")
    app.finish_run(elsewhere.run_id, "succeeded")
    assert world.claim() == []
    handed = app.finish_run(first.run_id, "succeeded")
    assert handed == []
    assert app.workspace_holders == {}
    assert world.claim() == [second.run_id]
    assert app.workspace_holders == {"ws-1": second.run_id}


def test_an_earlier_run_held_back_by_its_agent_still_keeps_its_place_on_the_workspace(
    app: HeartbeatControllerApplication, world: World
) -> None:
    busy, free = world.agent(name="busy"), world.agent(name="free")
    blocker = world.wake(busy)  # no issue: takes the busy agent's only place
    assert world.claim() == [blocker.run_id]
    waiting = world.wake(busy, world.issue(workspace="ws-1"))
    later = world.wake(free, world.issue(workspace="ws-1"))
    assert world.claim() == []  # ws-1 is wanted first by the busy agent's run
    app.finish_run(blocker.run_id, "succeeded")
    assert world.claim() == [waiting.run_id]
    app.finish_run(waiting.run_id, "failed", error_code="adapter_failed")
    assert world.claim() == [later.run_id]


def test_an_agent_runs_at_most_its_max_concurrent_runs(
    app: HeartbeatControllerApplication, world: World
) -> None:
    one, two = world.agent(name="one"), world.agent(name="two", max_runs=2)
    runs_one = [world.wake(one, world.issue()).run_id for _ in range(2)]
    runs_two = [world.wake(two, world.issue()).run_id for _ in range(3)]
    assert world.claim() == [runs_one[0], runs_two[0], runs_two[1]]
    app.finish_run(runs_two[0], "succeeded")
    assert world.claim() == [runs_two[2]]
    app.finish_run(runs_one[0], "succeeded")
    assert world.claim() == [runs_one[1]]
    assert sorted(r.id for r in app.running_runs()) == sorted(
        [runs_one[1], runs_two[1], runs_two[2]]
    )


def test_a_run_waits_for_a_realized_workspace_and_is_handed_it_when_the_holder_finishes(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent(max_runs=2)
    holder = world.wake(agent_id, world.issue(workspace="ws-1"))
    fresh = world.wake(agent_id, world.issue())  # no workspace yet: starts, realizes ws-1
    assert world.claim() == [holder.run_id, fresh.run_id]
    handed_seen: list[list[str]] = []
    app.on_workspace_handed.append(handed_seen.append)
    assert app.lease_workspace(holder.run_id, "ws-1") == "held"
    assert app.lease_workspace(fresh.run_id, "ws-1") == "waiting"
    assert app.lease_workspace(fresh.run_id, "ws-1") == "waiting"
    assert app.workspace_waiters == {"ws-1": [fresh.run_id]}
    # A third wake on ws-1 stays queued behind the waiting run.
    third = world.wake(agent_id, world.issue(workspace="ws-1"))
    assert world.claim() == []
    assert app.finish_run(holder.run_id, "succeeded") == [fresh.run_id]
    assert handed_seen == [[fresh.run_id]]
    assert app.workspace_holders == {"ws-1": fresh.run_id}
    assert app.workspace_waiters == {}
    assert app.lease_workspace(fresh.run_id, "ws-1") == "held"
    app.finish_run(fresh.run_id, "succeeded")
    assert world.claim() == [third.run_id]


def test_a_run_moving_to_another_workspace_hands_the_old_one_on(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent(max_runs=3)
    mover = world.wake(agent_id, world.issue(workspace="ws-old"))
    other = world.wake(agent_id, world.issue())
    world.claim()
    assert app.lease_workspace(other.run_id, "ws-old") == "waiting"
    handed_seen: list[list[str]] = []
    app.on_workspace_handed.append(handed_seen.append)
    assert app.lease_workspace(mover.run_id, "ws-new") == "acquired"
    assert app.workspace_holders == {"ws-old": other.run_id, "ws-new": mover.run_id}
    assert handed_seen == [[other.run_id]]


def test_cancel_of_a_queued_run_ends_it_at_once(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    accepted = world.wake(agent_id, world.issue())
    view, act = app.request_cancel(BOARD, accepted.run_id)
    assert act is False
    assert (view.status, view.stage, view.error_code, view.cancel_requested) == (
        "cancelled", "cleanup", "cancelled", True,
    )  # fmt: skip
    assert app.wakeups[accepted.wakeup_request_id].status == "cancelled"
    assert world.claim() == []
    # A new wake for that issue queues a new run (nothing to coalesce with).
    assert world.wake(agent_id).status == "queued"
    with pytest.raises(RunFinishedError) as raised:
        app.request_cancel(BOARD, accepted.run_id)
    assert (raised.value.code, raised.value.status) == ("run_finished", 409)


def test_cancel_of_a_running_run_asks_its_task_to_act(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    accepted = world.wake(agent_id)
    world.claim()
    view, act = app.request_cancel(BOARD, accepted.run_id)
    assert act is True
    assert (view.status, view.cancel_requested) == ("running", True)
    assert app.request_cancel(BOARD, accepted.run_id)[1] is True  # asked again: still to act
    app.finish_run(accepted.run_id, "cancelled")
    run = app.get_run(BOARD, accepted.run_id)
    assert (run.status, run.error_code, run.stage) == ("cancelled", "cancelled", "cleanup")


def test_runs_are_seen_and_cancelled_by_their_own_agent_only(
    app: HeartbeatControllerApplication, world: World
) -> None:
    me, other = world.agent(name="me"), world.agent(name="other")
    mine, theirs = world.wake(me).run_id, world.wake(other).run_id
    key = agent_principal(me)
    assert app.get_run(key, mine).id == mine
    assert [r.id for r in app.list_runs(key, RunFilters()).items] == [mine]
    with pytest.raises(AccessDeniedError):
        app.get_run(key, theirs)
    with pytest.raises(AccessDeniedError):
        app.list_runs(key, RunFilters(agent_id=other))
    with pytest.raises(AccessDeniedError):
        app.request_cancel(key, theirs)
    with pytest.raises(NotFoundError):
        app.get_run(OTHER_BOARD, mine)
    with pytest.raises(NotFoundError):
        app.request_cancel(OTHER_BOARD, mine)
    assert app.list_runs(OTHER_BOARD, RunFilters()).total == 0
    # Cancelling its own run while acting for another agent's run (X-Run-Id): refused too.
    with pytest.raises(AccessDeniedError) as raised:
        app.request_cancel(acting_for(key, theirs), mine)
    assert raised.value.details["field"] == "X-Run-Id"
    assert app.get_run(BOARD, mine).status == "queued"


def test_the_admin_key_reads_and_cancels_no_run(
    app: HeartbeatControllerApplication, world: World
) -> None:
    run_id = world.wake(world.agent()).run_id
    refusals = {
        "read": [lambda: app.get_run(ADMIN, run_id), lambda: app.list_runs(ADMIN, RunFilters())],
        "control": [lambda: app.request_cancel(ADMIN, run_id)],
    }
    for action, calls in refusals.items():
        for call in calls:
            with pytest.raises(AccessDeniedError) as denied:
                call()
            assert denied.value.status == 403
            assert str(denied.value).startswith(f"The admin key may not {action} runs; ")
    assert app.get_run(BOARD, run_id).status == "queued"


def test_a_run_token_reaches_only_its_own_run_not_its_agents_others(
    app: HeartbeatControllerApplication, world: World
) -> None:
    me = world.agent(name="me", max_runs=3)
    mine, sibling = world.wake(me).run_id, world.wake(me, world.issue()).run_id
    world.claim()
    token = run_principal(me, mine, None)
    assert app.get_run(token, mine).id == mine
    assert [r.id for r in app.list_runs(token, RunFilters()).items] == [mine]
    assert app.list_runs(token, RunFilters(agent_id=me)).total == 1
    for reach in (lambda: app.get_run(token, sibling), lambda: app.request_cancel(token, sibling)):
        with pytest.raises(AccessDeniedError) as raised:
            reach()
        assert raised.value.status == 403
        assert f"its own run ({mine})" in str(raised.value)
    assert app.get_run(BOARD, sibling).cancel_requested is False
    # The agent's key still reaches both; the token may cancel its own run.
    assert {r.id for r in app.list_runs(agent_principal(me), RunFilters()).items} == {mine, sibling}
    assert app.request_cancel(token, mine)[1] is True


def test_runs_are_listed_newest_first_with_filters_and_without_excerpts(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent(max_runs=5)
    issue = world.issue()
    first, second = world.wake(agent_id, issue).run_id, world.wake(agent_id).run_id
    world.claim()
    world.launch(first)
    world.adapter_end(first)
    app.finish_run(first, "succeeded")
    page = app.list_runs(BOARD, RunFilters(), limit=10)
    assert [r.id for r in page.items] == [second, first]
    assert page.items[1].stdout_excerpt is None
    assert page.items[1].usage is None
    assert app.get_run(BOARD, first).stdout_excerpt == "hello\n"
    assert [r.id for r in app.list_runs(BOARD, RunFilters(issue_id=issue)).items] == [first]
    assert [r.id for r in app.list_runs(BOARD, RunFilters(status="running")).items] == [second]
    assert app.list_runs(BOARD, RunFilters(), limit=1, offset=1).items[0].id == first


def test_deleting_an_agent_cancels_its_queued_runs_and_asks_its_running_ones_to_cancel(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    running = world.wake(agent_id, world.issue(workspace="ws-1")).run_id
    world.claim()
    queued = world.wake(agent_id).run_id
    assert app.delete_agent(BOARD, agent_id) == [running]
    assert (app.get_run(BOARD, queued).status, app.get_run(BOARD, queued).error_code) == (
        "cancelled", "agent_deleted",
    )  # fmt: skip
    still = app.get_run(BOARD, running)
    assert (still.status, still.cancel_requested) == ("running", True)
    # The running run's task ends it; a new wake cannot reach the deleted agent.
    app.finish_run(running, "cancelled")
    assert app.workspace_holders == {}


def test_lifecycle_calls_on_a_finished_run_record_nothing(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    run_id = world.wake(agent_id).run_id
    world.claim()
    app.finish_run(run_id, "failed", error_code="slot_unavailable", error="no slot")
    before = app.last_notification_id()
    assert app.record_stage(run_id, "adapter_launch") is False
    assert app.finish_run(run_id, "succeeded") == []
    assert world.adapter_end(run_id) is None
    assert app.last_notification_id() == before
    assert app.has_processed("supervisor", world.positions["supervisor"])
    run = app.get_run(BOARD, run_id)
    assert (run.status, run.error_code, run.error) == ("failed", "slot_unavailable", "no slot")


def test_a_run_keeps_each_stage_it_entered_and_when_list_rows_do_not(
    app: HeartbeatControllerApplication, world: World, clock: Clock
) -> None:
    agent_id = world.agent(trust_level="trusted")
    issue = world.issue(workspace="ws-1")
    queued_at = clock.now
    accepted = world.wake(agent_id, issue)
    resolving_at = clock.advance(2)
    app.claim_runnable(resolving_at)
    slot_at = clock.advance(3)
    assert app.record_stage(accepted.run_id, "slot_acquisition")
    assert not app.record_stage(accepted.run_id, "slot_acquisition")  # already in it
    stages = [(s.stage, s.entered_at) for s in app.get_run(BOARD, accepted.run_id).stages]
    assert stages == [
        ("wakeup", queued_at),
        ("workspace_resolution", resolving_at),
        ("slot_acquisition", slot_at),
    ]
    [row] = app.list_runs(BOARD, RunFilters(), 10, 0).items
    assert row.stages == []
