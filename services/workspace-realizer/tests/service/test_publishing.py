"""Stored events -> public contracts: every public fact decodes as ``AnyEvent`` with its envelope."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.events import AnyEvent
from contracts.subjects import event_subject
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.orchestration.reopen import reopen
from workspace_realizer.publishing import to_contract

POLICY = {
    "enabled": True,
    "defaultMode": "isolated_workspace",
    "workspaceStrategy": {"type": "git_worktree"},
}


def published(app: WorkspaceRealizerApplication) -> list[Any]:
    notifications = app.recorder.select_notifications(start=None, limit=10_000)
    return [to_contract(app.mapper.to_domain_event(n)) for n in notifications]


async def test_every_public_fact_is_published_with_its_envelope(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board, POLICY)
    checkout = world.checkout(
        board, project, runtime_config={"services": [{"name": "web", "command": "npm start"}]}
    )
    app.update_project(board, project, "Renamed", None)
    app.update_project_workspace(
        board, project, checkout, {"setup_command": "make"}, ({"jobs": []},)
    )
    issue = world.issue(board, project, comment="hello", assignee_agent_id="agent-1")
    app.add_work_product(
        board, issue, {"type": "pull_request", "url": "https://github.com/a/b/pull/3"}
    )
    done = await realize(realizer, board, RealizeRequest(issue))
    app.update_workspace(
        board, done.workspace_id, {"name": "mine", "config": {"teardownCommand": "x"}}
    )
    app.update_issue(board, issue, {"status": "done", "title": "New title"})
    await archive(realizer, board, done.workspace_id)
    await reopen(realizer, board, done.workspace_id)
    events = [e for e in published(app) if e is not None]
    tags = [type(e).__struct_config__.tag for e in events]
    for expected in ("project.created.v1", "project.updated.v1", "project_workspace.created.v1",
                     "project_workspace.updated.v1", "project_workspace.runtime_config_changed.v1",
                     "issue.created.v1", "issue.commented.v1", "issue.work_product_added.v1",
                     "issue.workspace_linked.v1", "issue.status_changed.v1", "issue.updated.v1",
                     "workspace.realized.v1", "workspace.renamed.v1", "workspace.config_changed.v1",
                     "workspace.archived.v1", "workspace.reopened.v1"):  # fmt: skip
        assert expected in tags, expected
    for event in events:
        decoded = msgspec.json.decode(msgspec.json.encode(event), type=AnyEvent)
        assert decoded == event
        assert event.company_id == "c-acme"
        assert event_subject(type(event).__struct_config__.tag, "realizer").startswith("ws.evt.")
    realized = next(e for e in events if type(e).__struct_config__.tag == "workspace.realized.v1")
    assert (realized.aggregate, realized.aggregate_id, realized.source_issue_id) == (
        "workspace",
        done.workspace_id,
        issue,
    )
    assert realized.actor.type == "board"
    assert realized.node_id == "local"
    assert realized.created_worktree
    archived = next(e for e in events if type(e).__struct_config__.tag == "workspace.archived.v1")
    assert (archived.lifecycle_generation, archived.worktree_removed, archived.trigger) == (
        1,
        True,
        "manual",
    )
    status = next(e for e in events if type(e).__struct_config__.tag == "issue.status_changed.v1")
    assert (status.from_status, status.to_status, status.is_terminal) == ("todo", "done", True)


def test_private_facts_stay_private(app: WorkspaceRealizerApplication, world: Any) -> None:
    world.company()
    assert published(app) == [None]
