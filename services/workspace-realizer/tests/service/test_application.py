"""Use cases and read models on the in-memory store: narratives, access, lists, deletes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from eventsourcing.persistence import Tracking

from eventstore import verify_replay
from servicekit.access import Access, AccessDeniedError, ActorKind, NotVisibleError
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain import NotFoundError
from workspace_realizer.domain.errors import (
    DependentsError,
    IdentifierTakenError,
    PathRequiredError,
)
from workspace_realizer.domain.host.records import WorkspaceRealization

AGENT = Access(kind=ActorKind.AGENT_KEY, company_id="c-acme", actor_id="agent-1")
NOT_FOUND = (NotFoundError, NotVisibleError)
"""404 ``not_found``: unknown, or another company's (the access model's refusal)."""


def realized(app: WorkspaceRealizerApplication, issue_id: str, project_id: str, **kw: Any) -> str:
    fields = {"workspace_id": str(uuid.uuid4()), "company_id": "c-acme", "project_id": project_id,
              "project_workspace_id": None, "source_issue_id": issue_id, "mode": "isolated_workspace",
              "strategy_type": "git_worktree", "provider_type": "git_worktree", "provider_ref": "/w",
              "name": "b", "cwd": "/w", "repo_url": None, "base_ref": "origin/main",
              "base_ref_sha": "s", "branch_name": "b", "branch_created": True, "created_worktree": True,
              "node_id": "local", "config": {}, "operation_id": None, "warnings": []} | kw  # fmt: skip
    return str(app.record_realized(WorkspaceRealization(**fields)).id)


def test_issue_identifiers_come_from_the_company_prefix(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board)
    # The gateway's company arrives through the inbox; issues are numbered from its prefix.
    first, second = world.issue(board, project), world.issue(board, project)
    assert [app.issues[first].identifier, app.issues[second].identifier] == ["ACME-1", "ACME-2"]
    explicit = world.issue(board, project, identifier="ACME-7")
    assert app.issues[explicit].identifier == "ACME-7"
    assert app.issues[world.issue(board, project)].identifier == "ACME-8"
    with pytest.raises(IdentifierTakenError):
        world.issue(board, project, identifier="ACME-7")
    # A redelivered company event changes nothing but the position.
    app.register_company("c-acme", "Acme", "XXX", Tracking("gateway", 99))
    assert app.company_copy("c-acme").issue_prefix == "ACME"
    # A company the inbox has not seen: not found.
    stranger = Access(kind=ActorKind.BOARD_KEY, company_id="c-new", actor_id="k")
    elsewhere = world.project(stranger)
    with pytest.raises(NotFoundError, match="not known to the workspace-realizer"):
        world.issue(stranger, elsewhere)


def test_another_company_sees_nothing(app: WorkspaceRealizerApplication, world: Any) -> None:
    board = world.company()
    project = world.project(board)
    checkout = world.checkout(board, project)
    issue = world.issue(board, project)
    other = world.company("c-other", "OTH")
    before = app.last_notification_id()
    for attempt in (
        lambda: app.project_of(other, project),
        lambda: app.project_workspace_of(other, project, checkout),
        lambda: app.issue_of(other, issue),
        lambda: app.update_issue(other, issue, {"title": "mine"}),
        lambda: app.create_project_workspace(other, project, {"name": "x", "cwd": "/x"}, None),
        lambda: app.list_issues(other, "c-acme"),
        lambda: app.create_project(other, "c-acme", "x", None),
    ):
        with pytest.raises(NOT_FOUND):
            attempt()
    assert app.last_notification_id() == before


def test_agents_touch_only_their_issues_and_only_the_mode(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board)
    mine = world.issue(board, project, assignee_agent_id="agent-1")
    theirs = world.issue(board, project, assignee_agent_id="agent-2")
    # Reads and updates of another agent's issue are forbidden; lists hide it.
    with pytest.raises(AccessDeniedError):
        app.issue_of(AGENT, theirs)
    rows, total = app.list_issues(AGENT, "c-acme")
    assert ([str(i.id) for i in rows], total) == ([mine], 1)
    # Mode only: a strategy (it holds commands) or a pin is the board's.
    app.update_issue(AGENT, mine, {"settings": {"mode": "isolated_workspace"}})
    for settings in ({"mode": "inherit", "workspaceStrategy": {"provisionCommand": "rm -rf /"}},
                     {"mode": "reuse_existing", "executionWorkspaceId": "w"}):  # fmt: skip
        with pytest.raises(AccessDeniedError, match=r"only executionWorkspaceSettings\.mode"):
            app.update_issue(AGENT, mine, {"settings": settings})
    with pytest.raises(AccessDeniedError):
        app.create_project(AGENT, "c-acme", "P", None)
    with pytest.raises(AccessDeniedError):
        app.update_workspace(
            AGENT, realized(app, mine, project), {"config": {"provisionCommand": "x"}}
        )


def test_project_workspaces_primary_and_bad_input(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board)
    first = world.checkout(board, project, is_primary=True)
    second = world.checkout(board, project, name="second", is_primary=True)
    assert (
        app.project_workspaces[first].is_primary,
        app.project_workspaces[second].is_primary,
    ) == (False, True)
    app.update_project_workspace(board, project, first, {"is_primary": True})
    assert not app.project_workspaces[second].is_primary
    before = app.last_notification_id()
    with pytest.raises(PathRequiredError):
        app.create_project_workspace(board, project, {"name": "none"}, None)
    assert app.last_notification_id() == before
    with pytest.raises(NotFoundError):
        app.project_workspace_of(board, str(uuid.uuid4()), first)


def test_deletes_wait_for_open_dependents(app: WorkspaceRealizerApplication, world: Any) -> None:
    board = world.company()
    project = world.project(board)
    checkout = world.checkout(board, project)
    parent = world.issue(board, project)
    child = world.issue(board, project, parent_id=parent)
    workspace = realized(app, child, project, project_workspace_id=checkout)
    # An open workspace holds its issue, project workspace and project; an open child its parent.
    for delete in (lambda: app.delete_issue(board, child), lambda: app.delete_issue(board, parent),
                   lambda: app.delete_project_workspace(board, project, checkout),
                   lambda: app.delete_project(board, project)):  # fmt: skip
        with pytest.raises(DependentsError):
            delete()
    generation = app.start_archive(workspace, trigger="manual")
    app.fail_cleanup(workspace, generation, error="x", rescue_ref=None, operation_id=None)
    app.update_issue(board, child, {"status": "cancelled"})
    app.delete_issue(board, child)
    app.delete_issue(board, parent)
    app.delete_project_workspace(board, project, checkout)
    app.delete_project(board, project)
    with pytest.raises(NotFoundError):
        app.project_of(board, project)


def test_workspace_lists_filter_and_order_by_last_use(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board)
    a, b = world.issue(board, project), world.issue(board, project)
    older = realized(app, a, project)
    newer = realized(app, b, project, mode="shared_workspace")
    rows, total = app.list_workspaces(board, "c-acme")
    assert ([str(w.id) for w in rows], total) == ([newer, older], 2)
    app.record_reused(older, a, rebuilt=False, warnings=[])
    assert [str(w.id) for w in app.list_workspaces(board, "c-acme")[0]] == [older, newer]
    assert [str(w.id) for w in app.list_workspaces(board, "c-acme", reuse_eligible=True)[0]] == [
        older
    ]
    assert app.list_workspaces(board, "c-acme", issue_id=b)[1] == 1
    assert app.list_workspaces(board, "c-acme", statuses=["archived"])[1] == 0
    assert (
        app.list_workspaces(board, "c-acme", limit=1, offset=1)[0][0].id == app.workspaces[newer].id
    )
    # The issue follows into in_review, and its workspace with it (DECISIONS 12).
    app.update_issue(board, a, {"status": "in_review"})
    assert app.workspaces[older].status == "in_review"
    app.update_issue(board, a, {"status": "in_progress"})
    assert app.workspaces[older].status == "idle"


def test_replay_rebuilds_the_same_read_models(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board)
    issue = world.issue(board, project, comment="first")
    app.add_work_product(
        board, issue, {"type": "pull_request", "url": "https://github.com/a/b/pull/1"}
    )
    workspace = realized(app, issue, project)
    app.update_workspace(
        board, workspace, {"name": "renamed", "cleanup_eligible_at": datetime.now(UTC)}
    )
    fresh = WorkspaceRealizerApplication(service="realizer")
    report = verify_replay(fresh, app)
    assert report.differences == []
    assert report.ok
    assert report.notifications_replayed > 5
