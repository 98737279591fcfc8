"""Wakes: a wake queues a run; the same idempotency key answers the first wake's run; a wake for
an agent and issue with a queued run joins it; who may wake whom and for which issue; timer wakes
by interval; assignment wakes from the realizer's issue events."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import pytest
from controller_world import (
    ACME,
    ADMIN,
    BOARD,
    OTHER,
    OTHER_BOARD,
    SYSTEM,
    Clock,
    World,
    acting_for,
    agent_principal,
    published_since,
    run_principal,
)
from eventsourcing.persistence import IntegrityError, Tracking

from contracts import run_events as re_
from contracts.agents import RunFilters, UpdateAgent
from contracts.workspace_events import IssueAssigned, IssueDeleted, IssueStatusChanged
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.domain import NotFoundError, ValidationError
from servicekit.access import AccessDeniedError


def test_a_wake_queues_a_run_in_stage_wakeup(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    issue = world.issue()
    accepted = world.wake(agent_id, issue, reason="look at it", payload={"k": 1})
    assert accepted.status == "queued"
    run = app.get_run(BOARD, accepted.run_id)
    assert (run.status, run.stage, run.issue_id, run.source) == (
        "queued",
        "wakeup",
        issue,
        "on_demand",
    )
    assert (run.wake_reason, run.wakeup_request_id, run.coalesced_count) == (
        "look at it", accepted.wakeup_request_id, 0,
    )  # fmt: skip
    wakeup = app.wakeups[accepted.wakeup_request_id]
    assert wakeup.requested_by == {"type": "board", "id": "key-board"}
    assert wakeup.payload == {"k": 1}


def test_wakes_for_the_same_agent_and_issue_coalesce_while_the_run_is_queued(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent(max_runs=5)
    issue, other_issue = world.issue(), world.issue()
    first = world.wake(agent_id, issue)
    second = world.wake(agent_id, issue)
    assert (second.status, second.run_id) == ("coalesced", first.run_id)
    assert second.wakeup_request_id != first.wakeup_request_id
    assert app.get_run(BOARD, first.run_id).coalesced_count == 1
    assert world.wake(agent_id, other_issue).run_id != first.run_id
    no_issue = world.wake(agent_id)
    assert world.wake(agent_id).run_id == no_issue.run_id
    assert world.claim() == [
        first.run_id,
        app.list_runs(BOARD, RunFilters()).items[1].id,
        no_issue.run_id,
    ]
    # Started: a new wake for the same issue queues a new run.
    third = world.wake(agent_id, issue)
    assert (third.status, third.run_id != first.run_id) == ("queued", True)
    # Both wakes of the first run were claimed with it.
    assert {app.wakeups[w].status for w in (first.wakeup_request_id, second.wakeup_request_id)} == {
        "claimed"
    }


def test_the_same_idempotency_key_answers_the_first_wakes_run_and_records_nothing(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    first = world.wake(agent_id, idempotency_key="deliver-42")
    before = app.last_notification_id()
    again = world.wake(agent_id, idempotency_key="deliver-42")
    assert again == first
    assert app.last_notification_id() == before
    world.claim()
    app.finish_run(first.run_id, "succeeded")
    # Even after its run finished, the key still answers that run (now completed).
    late = world.wake(agent_id, idempotency_key="deliver-42")
    assert late == first
    assert app.wakeups[first.wakeup_request_id].status == "completed"
    # Keys are per agent.
    other = world.agent(name="other")
    assert world.wake(other, idempotency_key="deliver-42").run_id != first.run_id


def test_a_replayed_key_answers_what_the_first_wake_was_answered_within_the_contract(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    first = world.wake(agent_id)
    joined = world.wake(agent_id, idempotency_key="again")
    assert (joined.status, joined.run_id) == ("coalesced", first.run_id)
    world.claim()
    assert world.wake(agent_id, idempotency_key="again") == joined
    app.finish_run(first.run_id, "failed", error_code="adapter_failed")
    replay = world.wake(agent_id, idempotency_key="again")
    assert replay == joined
    assert replay.status in ("queued", "coalesced")


def test_an_agent_key_wakes_its_agent_only_for_issues_assigned_to_it(
    app: HeartbeatControllerApplication, world: World
) -> None:
    me, other = world.agent(name="me", max_runs=3), world.agent(name="other")
    key = agent_principal(me)
    unassigned, theirs, mine = world.issue(), world.issue(assignee=other), world.issue()
    world.assign(mine, me)
    before = app.last_notification_id()
    for issue in (unassigned, theirs):
        with pytest.raises(AccessDeniedError) as raised:
            world.wake(me, issue, principal=key)
        assert (raised.value.code, raised.value.status) == ("forbidden", 403)
        assert str(raised.value) == "This agent may only touch issues assigned to it."
        assert raised.value.details["issueId"] == issue
    assert app.last_notification_id() == before
    # Its own assignment: the wake joins the run the assignment queued.
    assert world.wake(me, mine, principal=key).status == "coalesced"
    assert world.wake(me, principal=key).status == "queued"
    # Unassigned again: refused again.
    world.assign(mine, None)
    with pytest.raises(AccessDeniedError):
        world.wake(me, mine, principal=key)
    # A board key still wakes any agent for any issue of the company.
    assert world.wake(me, unassigned).status == "queued"


def test_an_agent_wakes_only_itself(app: HeartbeatControllerApplication, world: World) -> None:
    me, other = world.agent(name="me"), world.agent(name="other")
    mine = agent_principal(me)
    assert world.wake(me, principal=mine).status == "queued"
    with pytest.raises(AccessDeniedError) as raised:
        world.wake(other, principal=mine)
    assert str(raised.value) == "An agent can only wake itself."
    assert (raised.value.code, raised.value.status) == ("forbidden", 403)


def test_a_run_token_wakes_its_agent_only_for_its_own_issue(
    app: HeartbeatControllerApplication, world: World
) -> None:
    me = world.agent(max_runs=3)
    own, foreign = world.issue(), world.issue()
    token = run_principal(me, "r-1", own)
    assert world.wake(me, own, principal=token).status == "queued"
    assert world.wake(me, principal=token).status == "queued"
    with pytest.raises(AccessDeniedError):
        world.wake(me, foreign, principal=token)


def test_a_board_key_wakes_only_for_a_run_of_its_company_as_x_run_id(
    app: HeartbeatControllerApplication, world: World
) -> None:
    # Company B's board key woke B's agent naming a run of company A: 404, nothing recorded.
    theirs = world.agent(principal=OTHER_BOARD, max_runs=3)
    mine = world.agent(name="mine", max_runs=3)
    acme_run = world.wake(mine).run_id
    other_run = world.wake(theirs, principal=OTHER_BOARD).run_id
    before = app.last_notification_id()
    for run_id in (acme_run, str(uuid4())):
        with pytest.raises(NotFoundError) as raised:
            world.wake(theirs, principal=acting_for(OTHER_BOARD, run_id))
        assert (raised.value.code, raised.value.status) == ("not_found", 404)
        assert raised.value.details == {"runId": run_id, "field": "X-Run-Id"}
        assert str(raised.value).startswith("X-Run-Id: ")
    assert app.last_notification_id() == before
    # A run of its own company (of any of its agents) is the wake's recorded run.
    issue = world.issue(company=OTHER)
    accepted = world.wake(theirs, issue, principal=acting_for(OTHER_BOARD, other_run))
    requested = [e for e in published_since(app, before) if isinstance(e, re_.WakeupRequested)]
    assert [(e.aggregate_id, e.run_id) for e in requested] == [
        (accepted.wakeup_request_id, other_run)
    ]


def test_an_agent_key_wakes_itself_only_for_a_run_of_its_own_agent_as_x_run_id(
    app: HeartbeatControllerApplication, world: World
) -> None:
    me, other = world.agent(name="me", max_runs=3), world.agent(name="other")
    theirs = world.agent(principal=OTHER_BOARD)
    my_run, their_run = world.wake(me).run_id, world.wake(other).run_id
    foreign_run = world.wake(theirs, principal=OTHER_BOARD).run_id
    key = agent_principal(me)
    before = app.last_notification_id()
    # Agent X woke itself naming a run of agent Y: 403, via the access model's run rule.
    with pytest.raises(AccessDeniedError) as denied:
        world.wake(me, principal=acting_for(key, their_run))
    assert (denied.value.code, denied.value.status) == ("forbidden", 403)
    assert str(denied.value) == "An agent can only act for its own runs."
    assert denied.value.details == {"runId": their_run, "actor": me, "field": "X-Run-Id"}
    # Another company's run (or none at all): not found, naming the header.
    for run_id in (foreign_run, str(uuid4())):
        with pytest.raises(NotFoundError) as missing:
            world.wake(me, principal=acting_for(key, run_id))
        assert missing.value.details == {"runId": run_id, "field": "X-Run-Id"}
    assert app.last_notification_id() == before
    # Its own run: the wake (coalesced with that queued run) records it.
    joined = world.wake(me, principal=acting_for(key, my_run))
    assert (joined.status, joined.run_id) == ("coalesced", my_run)
    coalesced = [e for e in published_since(app, before) if isinstance(e, re_.WakeupCoalesced)]
    assert [e.run_id for e in coalesced] == [my_run]


def test_a_run_tokens_run_is_left_to_the_gateway(
    app: HeartbeatControllerApplication, world: World
) -> None:
    # The gateway checks that a run token names its own run; the controller does not look it up.
    me = world.agent()
    assert world.wake(me, principal=run_principal(me, "r-unknown", None)).status == "queued"


def test_a_wake_names_an_issue_of_the_agents_company(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    foreign = world.issue(company=OTHER)
    with pytest.raises(NotFoundError):
        world.wake(agent_id, foreign)
    # Copies lag the realizer: an issue not seen yet is accepted from a board key...
    unseen = "issue-not-copied-yet"
    assert world.wake(agent_id, unseen).status == "queued"
    # ...but never from an agent.
    with pytest.raises(NotFoundError):
        world.wake(agent_id, "another-unseen-issue", principal=agent_principal(agent_id))
    deleted = world.issue()
    gone = IssueDeleted(**world._envelope("issue", deleted, ACME), identifier="ACME-1")
    app.note_issue_event(gone, world.tracking())
    with pytest.raises(NotFoundError):
        world.wake(agent_id, deleted)


def test_an_issue_of_another_company_is_not_found_whoever_names_it(
    app: HeartbeatControllerApplication, world: World
) -> None:
    me = world.agent(max_runs=3)
    foreign = world.issue(company=OTHER, assignee=me)
    # Even assigned to the agent (a reference across companies), and even as the run's issue:
    # another company's issue is "not found", naming the field, for every principal.
    token = run_principal(me, "r-1", foreign)
    before = app.last_notification_id()
    for principal in (BOARD, SYSTEM, agent_principal(me), token):
        with pytest.raises(NotFoundError) as raised:
            world.wake(me, foreign, principal=principal)
        assert (raised.value.code, raised.value.status) == ("not_found", 404)
        assert raised.value.details == {"issueId": foreign, "field": "issueId"}
        assert str(raised.value).startswith("issueId: ")
    assert app.last_notification_id() == before


def test_another_company_cannot_wake_an_agent_nor_the_admin_key_but_clipyard_itself_can(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    with pytest.raises(NotFoundError):
        world.wake(agent_id, principal=OTHER_BOARD)
    # The admin key controls no agent (ARCHITECTURE §5.1), even naming no issue: 403 first.
    before = app.last_notification_id()
    for principal in (ADMIN, acting_for(ADMIN, str(uuid4()))):
        with pytest.raises(AccessDeniedError) as denied:
            world.wake(agent_id, principal=principal)
        assert (denied.value.code, denied.value.status) == ("forbidden", 403)
        assert str(denied.value) == (
            "The admin key may not control agents; a board key, a board session, an agent key "
            "or a run token may."
        )
    assert app.last_notification_id() == before
    assert world.wake(agent_id, principal=SYSTEM).status == "queued"


def test_oversized_wakes_are_refused(app: HeartbeatControllerApplication, world: World) -> None:
    agent_id = world.agent()
    with pytest.raises(ValidationError) as raised:
        world.wake(agent_id, payload={"blob": "x" * 70_000})
    assert raised.value.details["field"] == "payload"
    with pytest.raises(ValidationError):
        world.wake(agent_id, idempotency_key="k" * 300)


def test_timer_wakes_come_each_interval_and_coalesce_with_the_queued_run(
    app: HeartbeatControllerApplication, world: World, clock: Clock
) -> None:
    agent_id = world.agent(interval=60)
    world.agent(name="no-timer")
    assert app.next_timer_due() == clock.now + timedelta(seconds=60)
    assert app.due_timer_wakes(clock.advance(59)) == []
    [first] = app.due_timer_wakes(clock.advance(1))
    run = app.get_run(BOARD, first.run_id)
    assert (run.source, run.wake_reason, run.issue_id, run.agent_id) == (
        "timer", "heartbeat_timer", None, agent_id,
    )  # fmt: skip
    assert app.due_timer_wakes(clock.advance(30)) == []
    [second] = app.due_timer_wakes(clock.advance(30))
    assert (second.status, second.run_id) == ("coalesced", first.run_id)
    # Stopping the timer stops the wakes.
    app.update_agent(
        BOARD, UpdateAgent(principal=BOARD, agent_id=agent_id, heartbeat_interval_sec=None)
    )
    assert app.due_timer_wakes(clock.advance(3600)) == []
    assert app.next_timer_due() is None


def test_one_agent_whose_timer_cannot_be_computed_never_stops_the_others(
    app: HeartbeatControllerApplication, world: World, clock: Clock
) -> None:
    broken, fine = world.agent(name="broken", interval=60), world.agent(name="fine", interval=60)
    # As stored before the contract bounded the interval: its due time overflows a datetime.
    app.agents[broken].heartbeat_interval_sec = 10**12
    assert app.next_timer_due() == clock.now + timedelta(seconds=60)
    [woken] = app.due_timer_wakes(clock.advance(60))
    assert app.get_run(BOARD, woken.run_id).agent_id == fine


def test_a_timer_wake_that_fails_to_save_skips_only_that_agent(
    app: HeartbeatControllerApplication, world: World, clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    first, second = world.agent(name="first", interval=60), world.agent(name="second", interval=60)
    real = app._wake

    def failing(agent, **kwargs):  # type: ignore[no-untyped-def]
        if str(agent.id) == first:
            raise RuntimeError("store refused")
        return real(agent, **kwargs)

    monkeypatch.setattr(app, "_wake", failing)
    [woken] = app.due_timer_wakes(clock.advance(60))
    assert app.get_run(BOARD, woken.run_id).agent_id == second
    monkeypatch.setattr(app, "_wake", real)
    # The skipped agent is still due: the next pass wakes it.
    [later] = app.due_timer_wakes(clock.advance(1))
    assert app.get_run(BOARD, later.run_id).agent_id == first


def test_a_timer_set_later_counts_from_when_it_was_set(
    app: HeartbeatControllerApplication, world: World, clock: Clock
) -> None:
    agent_id = world.agent()
    clock.advance(1000)
    app.update_agent(
        BOARD, UpdateAgent(principal=BOARD, agent_id=agent_id, heartbeat_interval_sec=30)
    )
    assert app.due_timer_wakes(clock.advance(29)) == []
    assert len(app.due_timer_wakes(clock.advance(1))) == 1


def test_assigning_an_issue_wakes_the_agent_in_the_same_save_as_the_position(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    issue = world.issue()
    accepted = world.assign(issue, agent_id)
    assert accepted is not None
    run = app.get_run(BOARD, accepted.run_id)
    assert (run.source, run.wake_reason, run.issue_id) == ("assignment", "issue_assigned", issue)
    assert app.issues[issue].assignee_agent_id == agent_id
    position = world.positions["realizer"]
    assert app.has_processed("realizer", position)
    # The same position again is refused as a whole: the inbox never applies an event twice.
    with pytest.raises(IntegrityError):
        app.note_issue_event(
            _assigned_again(world, issue, agent_id), Tracking("realizer", position)
        )
    assert app.list_runs(BOARD, RunFilters()).total == 1


def _assigned_again(world: World, issue: str, agent_id: str) -> IssueAssigned:
    return IssueAssigned(**world._envelope("issue", issue, ACME), assignee_agent_id=agent_id)


def test_an_issue_created_assigned_wakes_its_agent_but_not_when_it_is_closed(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent(max_runs=5)
    world.issue(assignee=agent_id)
    world.issue(assignee=agent_id, status="done")
    runs = app.list_runs(BOARD, RunFilters()).items
    assert [(r.source, r.wake_reason) for r in runs] == [("assignment", "issue_assigned")]


def test_assignments_that_wake_no_one(app: HeartbeatControllerApplication, world: World) -> None:
    agent_id = world.agent()
    foreign_issue = world.issue(company=OTHER)
    assert world.assign(foreign_issue, agent_id, company=OTHER) is None
    issue = world.issue()
    assert world.assign(issue, "agent-of-nobody") is None
    assert world.assign(issue, None) is None
    app.delete_agent(BOARD, agent_id)
    assert world.assign(issue, agent_id) is None
    assert app.list_runs(BOARD, RunFilters()).total == 0
    # Every event's position was recorded all the same.
    assert app.has_processed("realizer", world.positions["realizer"])


def test_the_copies_follow_the_issues_workspace_and_status(
    app: HeartbeatControllerApplication, world: World
) -> None:
    issue = world.issue(workspace="ws-1")
    assert app.issues[issue].execution_workspace_id == "ws-1"
    world.link(issue, None)
    assert app.issues[issue].execution_workspace_id is None
    moved = IssueStatusChanged(**world._envelope("issue", issue, ACME), from_status="todo",
                               to_status="in_review", is_terminal=False)  # fmt: skip
    app.note_issue_event(moved, world.tracking())
    assert app.issues[issue].status == "in_review"
