"""A run's whole life as the public events show it (the six stages, the workspace lease,
``RunFinished`` last in its save), private facts kept private, nothing token-like stored, and
read models rebuilt from the store equal to the live ones."""

from __future__ import annotations

from typing import Any

import msgspec
from controller_world import BOARD, Clock, World, make_app

from contracts import run_events as re_
from contracts.agents import UpdateAgent
from contracts.subjects import event_subject
from eventstore import verify_replay
from eventstore.privacy import PrivacyPolicy
from eventstore.replay import compare_read_models, snapshot_read_models
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.domain.stage_detail import (
    CleanupDetail,
    EndDetail,
    LaunchDetail,
    SlotDetail,
    StageDetail,
    WorkspaceDetail,
)
from heartbeat_controller.orchestration.env import RunIdentity, adapter_context
from heartbeat_controller.publishing import to_contract

STAGES = [
    "workspace_resolution",
    "slot_acquisition",
    "adapter_launch",
    "result_collection",
    "cleanup",
]


def _stored(app: HeartbeatControllerApplication, after: int = 0) -> list[Any]:
    notifications = app.recorder.select_notifications(
        start=after, limit=10_000, inclusive_of_start=False
    )
    return [app.mapper.to_domain_event(n) for n in notifications]


def _published(app: HeartbeatControllerApplication, after: int = 0) -> list[Any]:
    return [c for c in (to_contract(e) for e in _stored(app, after)) if c is not None]


def _narrative(app: HeartbeatControllerApplication, world: World, clock: Clock) -> dict[str, str]:
    """Every kind of fact the controller records, once or more."""
    coder = world.agent(name="coder", interval=60, max_runs=2)
    issue = world.issue(workspace="ws-1")
    first = world.assign(issue, coder)
    waiting = world.wake(coder, world.issue(), idempotency_key="k-1", payload={"n": 1})
    world.wake(coder, issue)  # coalesced
    world.claim()
    app.lease_workspace(waiting.run_id, "ws-1")
    world.launch(first.run_id)
    clock.advance(5)
    world.adapter_end(first.run_id)
    app.finish_run(first.run_id, "succeeded")
    app.request_cancel(BOARD, waiting.run_id)
    app.finish_run(waiting.run_id, "cancelled")
    app.due_timer_wakes(clock.advance(60))
    app.update_agent(BOARD, UpdateAgent(principal=BOARD, agent_id=coder, name="coder-2"))
    doomed = world.agent(name="doomed")
    world.wake(doomed)
    app.delete_agent(BOARD, doomed)
    return {"coder": coder, "issue": issue, "first": first.run_id, "waiting": waiting.run_id}


def test_a_runs_public_events_show_its_six_stages_and_its_workspace_lease(
    app: HeartbeatControllerApplication, world: World, clock: Clock
) -> None:
    ids = _narrative(app, world, clock)
    of_run = [e for e in _published(app) if e.aggregate_id == ids["first"]]
    kinds = [type(e).__name__ for e in of_run]
    assert kinds[:4] == ["RunQueued", "RunStarted", "RunWorkspaceLeased", "RunStageChanged"]
    assert kinds[-2:] == ["RunWorkspaceReleased", "RunFinished"]
    stages = [e.stage for e in of_run if isinstance(e, re_.RunStageChanged)]
    assert stages == STAGES
    finished = of_run[-1]
    assert (finished.status, finished.exit_code, finished.workspace_id) == ("succeeded", 0, "ws-1")
    assert all(e.company_id == "c-acme" and e.run_id == ids["first"] for e in of_run)
    assert {e.agent_id for e in of_run} == {ids["coder"]}
    queued = of_run[0]
    assert (queued.source, queued.wake_reason, queued.issue_id) == (
        "assignment", "issue_assigned", ids["issue"],
    )  # fmt: skip
    for event in of_run:  # every one goes on its subject
        assert event_subject(type(event).__struct_config__.tag, "controller").startswith(
            "ws.evt.run."
        )


def test_run_finished_is_the_last_event_of_the_save_that_hands_the_workspace_on(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent(max_runs=2)
    holder = world.wake(agent_id, world.issue(workspace="ws-1")).run_id
    waiter = world.wake(agent_id, world.issue()).run_id
    world.claim()
    app.lease_workspace(waiter, "ws-1")
    before = app.last_notification_id()
    app.finish_run(holder, "timed_out")
    saved = _stored(app, before)
    published = [to_contract(e) for e in saved]
    names = [type(p).__name__ for p in published if p is not None]
    assert names == ["RunStageChanged", "RunWorkspaceReleased", "RunWorkspaceLeased", "RunFinished"]
    assert published[-1].aggregate_id == holder  # type: ignore[union-attr]
    assert published[-1].error_code == "timed_out"  # type: ignore[union-attr]
    leased = next(p for p in published if isinstance(p, re_.RunWorkspaceLeased))
    assert (leased.aggregate_id, leased.workspace_id) == (waiter, "ws-1")
    # Every event of the finish went in one transaction.
    assert len(
        {n.id for n in app.recorder.select_notifications(start=before + 1, limit=100)}
    ) == len(saved)


def test_agents_and_wakes_publish_without_config_and_private_facts_publish_nothing(
    app: HeartbeatControllerApplication, world: World, clock: Clock
) -> None:
    _narrative(app, world, clock)
    published = _published(app)
    types = {type(e).__name__ for e in published}
    assert {"AgentCreated", "AgentUpdated", "AgentDeleted", "WakeupRequested", "WakeupCoalesced",
            "RunCancelRequested"} <= types  # fmt: skip
    for event in published:
        text = msgspec.json.encode(event).decode()
        assert "adapterConfig" not in text
        assert "agent.py" not in text
        assert "hello" not in text  # excerpts stay in the store
    private = {type(e).__qualname__ for e in _stored(app) if to_contract(e) is None}
    assert private == {
        "Run.WakeJoined", "Run.WorkspaceAwaited", "Run.SlotGranted", "Run.AdapterLaunched",
        "Run.ResultCollected", "WakeupRequest.Claimed", "WakeupRequest.Completed",
        "WakeupRequest.Cancelled", "IssueCopy.Copied", "IssueCopy.Noted",
    }  # fmt: skip
    updated = next(e for e in published if isinstance(e, re_.AgentUpdated))
    assert updated.changed_fields == ["name"]
    coalesced = next(e for e in published if isinstance(e, re_.WakeupCoalesced))
    requested = [e for e in published if isinstance(e, re_.WakeupRequested)]
    assert coalesced.queued_run_id in {e.queued_run_id for e in requested}
    assert "k-1" in {e.idempotency_key for e in requested}


def test_nothing_token_like_is_ever_stored(
    app: HeartbeatControllerApplication, world: World, clock: Clock
) -> None:
    ids = _narrative(app, world, clock)
    policy = PrivacyPolicy()
    for stored in _stored(app):
        state = msgspec.to_builtins(vars(stored), enc_hook=str)
        assert policy.drop_private(state) == state, type(stored).__qualname__
        text = msgspec.json.encode(state).decode()
        assert "CLIPYARD_API_KEY" not in text
        assert "PAPERCLIP_API_KEY" not in text
    launch = app.run_record(ids["first"]).launch
    assert launch is not None
    assert set(launch) == {"slot_id", "pid", "pgid", "started_at", "deadline"}


def test_read_models_rebuilt_from_the_store_equal_the_live_ones(
    app: HeartbeatControllerApplication, world: World, clock: Clock
) -> None:
    _narrative(app, world, clock)
    assert app.queued
    assert app.runs
    assert app.issues
    assert app.last_timer_wake
    report = verify_replay(make_app(clock), app)
    assert report.ok, report.differences
    assert report.notifications_replayed == app.last_notification_id()
    # The comparison does see a difference: a snapshot taken before one more wake.
    before = snapshot_read_models(app)
    world.wake(next(a for a, agent in app.agents.items() if not agent.deleted))
    fresh = make_app(clock)
    fresh.rebuild_read_models(app.recorder)
    stale = compare_read_models(before, fresh)
    assert not stale.ok
    assert any(d.startswith("wakeups[") for d in stale.differences), stale.differences


def test_each_stage_detail_is_published_as_the_json_its_stored_dict_was(
    app: HeartbeatControllerApplication, world: World
) -> None:
    # Every kind of detail, through the store and out as RunStageChanged: the typed
    # RunStageDetail encodes byte for byte as the stored camelCase dict would (same keys, same
    # order, nulls kept, nothing added).
    coder = world.agent(name="coder")
    run_id = world.wake(coder).run_id
    world.claim()
    details: list[tuple[str, StageDetail]] = [
        (
            "slot_acquisition",
            WorkspaceDetail(workspace_id="ws-1", created=True, services=["db"]),
        ),
        (
            "adapter_launch",
            SlotDetail(slot_id="s-1", slot_type="local_stdio", contained=True, sandbox="bwrap"),
        ),
        ("result_collection", LaunchDetail(pid=None, pgid=7, deadline="2026-01-01T00:00:00Z")),
        ("cleanup", CleanupDetail(status="failed", error_code=None)),
    ]
    start = app.recorder.max_notification_id() or 0
    for stage, detail in details:
        assert app.record_stage(run_id, stage, detail)
    app.record_stage(run_id, "workspace_resolution", EndDetail(end="exited"))
    stored = [e for e in _stored(app, start) if type(e).__name__ == "StageChanged"]
    published = [to_contract(e) for e in stored]
    assert len(published) == 5
    for event, contract in zip(stored, published, strict=True):
        assert isinstance(contract, re_.RunStageChanged)
        assert isinstance(contract.detail, re_.RunStageDetail)
        as_dict = msgspec.structs.replace(contract, detail=event.detail)
        assert msgspec.json.encode(contract) == msgspec.json.encode(as_dict)
    assert [e.detail for e in stored] == [
        *(msgspec.to_builtins(d) for _, d in details),
        {"end": "exited"},
    ]
    assert stored[2].detail == {"pid": None, "pgid": 7, "deadline": "2026-01-01T00:00:00Z"}


def test_the_http_adapter_context_is_the_plain_json_it_always_was() -> None:
    identity = RunIdentity(
        api_url="http://api",
        run_id="r-1",
        agent_id="a-1",
        company_id="c-1",
        issue_id=None,
        workspace_id="ws-1",
        wake_reason="ping",
        payload={"n": 1},
    )
    context = adapter_context(identity, "tok")
    assert type(context) is dict
    assert list(context.items()) == [
        ("apiUrl", "http://api"),
        ("apiKey", "tok"),
        ("runId", "r-1"),
        ("agentId", "a-1"),
        ("companyId", "c-1"),
        ("taskId", None),
        ("wakeReason", "ping"),
        ("workspaceId", "ws-1"),
        ("wakePayload", {"n": 1}),
    ]
