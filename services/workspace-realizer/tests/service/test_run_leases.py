"""Workspace status follows runs (DECISIONS 12): the controller's run events, as the realizer's
inbox applies them (``note_run_event`` with the inbox position)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from eventsourcing.persistence import Tracking

from contracts.base import Actor
from contracts.run_events import RunFinished, RunStarted, RunWorkspaceLeased, RunWorkspaceReleased
from eventstore import acting, system_cause
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.publishing import to_contract

ISOLATED = {"enabled": True, "defaultMode": "isolated_workspace",
            "workspaceStrategy": {"type": "git_worktree"}}  # fmt: skip
CONTROLLER = Actor(type="system", id="heartbeat-controller")
_positions = itertools.count(1)


def _envelope(run_id: str, version: int = 1) -> dict[str, Any]:
    return {
        "event_id": f"evt-{run_id}-{version}",
        "aggregate": "run",
        "aggregate_id": run_id,
        "aggregate_version": version,
        "company_id": "c-acme",
        "occurred_at": datetime.now(UTC),
        "actor": CONTROLLER,
    }


def leased(run_id: str, workspace_id: str) -> RunWorkspaceLeased:
    return RunWorkspaceLeased(**_envelope(run_id, 2), agent_id="agent-1", workspace_id=workspace_id)


def released(run_id: str, workspace_id: str) -> RunWorkspaceReleased:
    return RunWorkspaceReleased(
        **_envelope(run_id, 3), agent_id="agent-1", workspace_id=workspace_id
    )


def finished(run_id: str, workspace_id: str | None) -> RunFinished:
    return RunFinished(
        **_envelope(run_id, 4), agent_id="agent-1", workspace_id=workspace_id, status="succeeded"
    )


def deliver(app: WorkspaceRealizerApplication, event: Any) -> None:
    """As the inbox does: on behalf of the realizer itself, with the next position."""
    with acting(system_cause("workspace-realizer", "run event from controller")):
        app.note_run_event(event, Tracking("controller", next(_positions)))


def status_changes(app: WorkspaceRealizerApplication, workspace_id: str) -> list[Any]:
    """The public ``workspace.status_changed.v1`` events of the workspace, in order."""
    notifications = app.recorder.select_notifications(start=None, limit=10_000)
    found = [to_contract(app.mapper.to_domain_event(n)) for n in notifications]
    return [
        e
        for e in found
        if e is not None
        and type(e).__struct_config__.tag == "workspace.status_changed.v1"
        and e.aggregate_id == workspace_id
    ]


@pytest.fixture
async def realized(realizer: Realizer, app: WorkspaceRealizerApplication, world: Any) -> Any:
    board = world.company()
    project = world.project(board, ISOLATED)
    world.checkout(board, project)
    issue = world.issue(board, project)
    done = await realize(realizer, board, RealizeRequest(issue))
    return board, issue, done.workspace_id


async def test_a_run_makes_the_workspace_active_and_its_end_makes_it_idle(
    app: WorkspaceRealizerApplication, realized: Any
) -> None:
    board, _, ws = realized
    app.update_workspace(board, ws, {"status": "idle"})
    deliver(app, leased("run-1", ws))
    assert (app.workspaces[ws].status, app.run_holders[ws]) == ("active", {"run-1"})
    deliver(app, released("run-1", ws))
    assert app.workspaces[ws].status == "idle"
    assert ws not in app.run_holders
    # ``run.finished`` after the release changes nothing more.
    version = app.workspaces[ws].version
    deliver(app, finished("run-1", ws))
    assert app.workspaces[ws].version == version
    # Each change is the public status event, naming the run and why.
    changes = status_changes(app, ws)
    assert [(c.from_status, c.to_status) for c in changes] == [
        ("active", "idle"),  # the board's
        ("idle", "active"),
        ("active", "idle"),
    ]
    assert [c.run_id for c in changes[1:]] == ["run-1", "run-1"]
    assert changes[1].reason == "run run-1 holds the workspace's run lease"
    assert changes[2].reason == "run run-1 released; no run holds the workspace (idle)"
    assert (changes[1].actor.type, changes[1].actor.id) == ("system", "workspace-realizer")


async def test_run_finished_alone_releases_the_workspace(
    app: WorkspaceRealizerApplication, realized: Any
) -> None:
    _, _, ws = realized
    deliver(app, leased("run-1", ws))
    deliver(app, finished("run-1", ws))
    assert app.workspaces[ws].status == "idle"
    assert app.workspaces[ws].run_ids == []
    assert status_changes(app, ws)[-1].reason == (
        "run run-1 finished; no run holds the workspace (idle)"
    )


async def test_redelivery_changes_nothing(app: WorkspaceRealizerApplication, realized: Any) -> None:
    _, _, ws = realized
    deliver(app, leased("run-1", ws))
    version = app.workspaces[ws].version
    deliver(app, leased("run-1", ws))
    assert app.workspaces[ws].version == version
    deliver(app, released("run-1", ws))
    version = app.workspaces[ws].version
    deliver(app, released("run-1", ws))
    deliver(app, finished("run-1", ws))
    assert app.workspaces[ws].version == version
    assert app.workspaces[ws].status == "idle"


async def test_the_workspace_stays_active_while_another_run_holds_it(
    app: WorkspaceRealizerApplication, realized: Any
) -> None:
    _, _, ws = realized
    deliver(app, leased("run-1", ws))
    deliver(app, leased("run-2", ws))
    deliver(app, released("run-1", ws))
    assert (app.workspaces[ws].status, app.run_holders[ws]) == ("active", {"run-2"})
    deliver(app, finished("run-2", ws))
    assert app.workspaces[ws].status == "idle"


async def test_a_finished_run_leaves_the_workspace_in_review_when_its_issue_is(
    app: WorkspaceRealizerApplication, realized: Any
) -> None:
    board, issue, ws = realized
    deliver(app, leased("run-1", ws))
    # The agent moves its issue to review during the run: the workspace follows (as before).
    app.update_issue(board, issue, {"status": "in_review"})
    assert app.workspaces[ws].status == "in_review"
    deliver(app, released("run-1", ws))
    assert app.workspaces[ws].status == "in_review"
    assert status_changes(app, ws)[-1].to_status == "in_review"
    # Out of review with no run holding it: idle (as before).
    app.update_issue(board, issue, {"status": "in_progress"})
    assert app.workspaces[ws].status == "idle"


async def test_leaving_review_while_a_run_holds_the_workspace_makes_it_active(
    app: WorkspaceRealizerApplication, realized: Any
) -> None:
    board, issue, ws = realized
    app.update_issue(board, issue, {"status": "in_review"})
    deliver(app, leased("run-1", ws))
    assert app.workspaces[ws].status == "active"
    app.update_issue(board, issue, {"status": "in_review"})  # unchanged: nothing moves
    app.update_issue(board, issue, {"status": "todo"})
    assert app.workspaces[ws].status == "active"
    app.update_workspace(board, ws, {"status": "in_review"})
    app.update_issue(board, issue, {"status": "in_progress"})
    assert app.workspaces[ws].status == "active"


async def test_an_archived_workspace_keeps_its_status_but_the_holder_is_recorded(
    realizer: Realizer, app: WorkspaceRealizerApplication, realized: Any
) -> None:
    board, issue, ws = realized
    app.update_issue(board, issue, {"status": "done"})
    await archive(realizer, board, ws)
    assert app.workspaces[ws].status == "archived"
    deliver(app, leased("run-1", ws))
    assert (app.workspaces[ws].status, app.run_holders[ws]) == ("archived", {"run-1"})
    deliver(app, finished("run-1", ws))
    assert (app.workspaces[ws].status, app.run_holders.get(ws)) == ("archived", None)


async def test_other_events_and_unknown_workspaces_only_advance_the_inbox(
    app: WorkspaceRealizerApplication, realized: Any
) -> None:
    _, _, ws = realized
    before = app.last_notification_id()
    deliver(app, RunStarted(**_envelope("run-9"), agent_id="agent-1", workspace_id=ws))
    deliver(app, leased("run-9", "00000000-0000-4000-8000-000000000000"))
    deliver(app, finished("run-9", None))
    assert app.last_notification_id() == before
    assert app.workspaces[ws].run_ids == []
    # The positions are recorded: a redelivery of them is skipped by the inbox.
    assert app.recorder.max_tracking_id("controller") is not None


async def test_the_holders_are_private_facts_rebuilt_with_the_workspace(
    app: WorkspaceRealizerApplication, realized: Any
) -> None:
    _, _, ws = realized
    deliver(app, leased("run-1", ws))
    notifications = app.recorder.select_notifications(start=None, limit=10_000)
    stored = [app.mapper.to_domain_event(n) for n in notifications]
    held = [e for e in stored if type(e).__name__ == "RunLeased"]
    assert len(held) == 1
    assert to_contract(held[0]) is None
    # A rebuild of the read models from the store finds the holder again.
    app.init_read_models()
    for event in stored:
        app.project(event)
    assert app.run_holders == {ws: {"run-1"}}
