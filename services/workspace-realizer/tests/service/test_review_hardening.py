"""The review's findings: cross-company references, agent rights on workspaces, naive times,
checkout paths, credentials in repoUrl, unknown home directories, agent modes, project deletes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts.execution_commands import GetWorkspaceHistory, UpdateExecutionWorkspace
from contracts.workspace_http import UpdateExecutionWorkspaceBody
from servicekit.access import Access, AccessDeniedError, ActorKind
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain.errors import (
    DependentsError,
    InvalidInputError,
    NotFoundError,
    RequiresProjectError,
)
from workspace_realizer.domain.host.records import WorkspaceRealization
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.usecases.host.planning import plan_realization

ISOLATED = {"enabled": True, "defaultMode": "isolated_workspace", "allowIssueOverride": True,
            "workspaceStrategy": {"type": "git_worktree"}}  # fmt: skip
AGENT = Access(kind=ActorKind.AGENT_KEY, company_id="c-acme", actor_id="agent-1")
OTHER_AGENT = Access(kind=ActorKind.AGENT_KEY, company_id="c-acme", actor_id="agent-2")


def _evil(world: Any) -> Access:
    return world.company("c-evil", "EVIL")


def test_a_default_project_workspace_must_be_a_live_one_of_the_same_project(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    acme_project = world.project(board, ISOLATED)
    acme_checkout = world.checkout(board, acme_project)
    evil = _evil(world)
    stolen = ISOLATED | {"defaultProjectWorkspaceId": acme_checkout}
    with pytest.raises(InvalidInputError, match="defaultProjectWorkspaceId"):
        world.project(evil, stolen)
    evil_project = world.project(evil, ISOLATED)
    with pytest.raises(InvalidInputError, match="defaultProjectWorkspaceId"):
        app.update_project(evil, evil_project, None, stolen)
    # Another project of the same company, or a deleted workspace: refused too.
    sibling = world.project(board, ISOLATED)
    with pytest.raises(InvalidInputError):
        app.update_project(board, sibling, None, stolen)
    app.update_project(board, acme_project, None, stolen)
    assert app.projects[acme_project].policy["defaultProjectWorkspaceId"] == acme_checkout


def test_a_foreign_default_is_ignored_at_realization_and_deletes_ignore_other_companies(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    acme_project = world.project(board, ISOLATED)
    acme_checkout = world.checkout(board, acme_project)
    evil = _evil(world)
    evil_project = world.project(evil, dict(ISOLATED))
    # A policy stored before the check (replayed history) still never reaches ACME's checkout.
    app.projects[evil_project].policy["defaultProjectWorkspaceId"] = acme_checkout
    evil_issue = world.issue(evil, evil_project)
    with pytest.raises(RequiresProjectError):
        plan_realization(app, evil, evil_issue, None, None, None)
    # An open EVIL workspace naming ACME's checkout does not block (nor show in) ACME's delete.
    fields = {"workspace_id": str(uuid.uuid4()), "company_id": "c-evil", "project_id": evil_project,
              "project_workspace_id": acme_checkout, "source_issue_id": evil_issue,
              "mode": "isolated_workspace", "strategy_type": "git_worktree",
              "provider_type": "git_worktree", "provider_ref": "/w", "name": "b", "cwd": "/w",
              "repo_url": None, "base_ref": "origin/main", "base_ref_sha": "s", "branch_name": "b",
              "branch_created": True, "created_worktree": True, "node_id": "local", "config": {},
              "operation_id": None, "warnings": []}  # fmt: skip
    app.record_realized(WorkspaceRealization(**fields))
    app.delete_project_workspace(board, acme_project, acme_checkout)
    assert app.project_workspaces[acme_checkout].deleted


async def test_a_deleted_chosen_base_is_refused_not_realized_without_a_checkout(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board, ISOLATED)
    chosen = world.checkout(board, project)
    world.checkout(board, project, name="other")
    issue = world.issue(board, project, project_workspace_id=chosen)
    app.delete_project_workspace(board, project, chosen)
    with pytest.raises(RequiresProjectError, match="was deleted"):
        await realize(realizer, board, RealizeRequest(issue))


async def test_agents_read_workspaces_but_only_the_board_changes_them(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board, ISOLATED)
    world.checkout(board, project)
    mine = world.issue(board, project, assignee_agent_id="agent-1")
    theirs = world.issue(board, project, assignee_agent_id="agent-2")
    done = await realize(realizer, board, RealizeRequest(theirs))
    mine_done = await realize(realizer, AGENT, RealizeRequest(mine))
    assert app.workspace_of(AGENT, mine_done.workspace_id).status == "active"
    for change in ({"status": "idle"}, {"name": "x"}, {"cleanup_eligible_at": None}):
        with pytest.raises(AccessDeniedError, match="Only a board key"):
            app.update_workspace(AGENT, mine_done.workspace_id, change)
    # An agent pins only a workspace of its own issues.
    with pytest.raises(AccessDeniedError, match="only a workspace of its own issues"):
        await realize(
            realizer,
            AGENT,
            RealizeRequest(mine, mode="reuse_existing", workspace_id=done.workspace_id),
        )
    assert app.issues[mine].execution_workspace_id == mine_done.workspace_id


def test_naive_times_are_refused_at_the_contract_and_taken_as_utc_in_the_realizer(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(
            b'{"cleanupEligibleAt": "2020-01-01T00:00:00"}', type=UpdateExecutionWorkspaceBody
        )
    aware = msgspec.json.decode(
        b'{"cleanupEligibleAt": "2020-01-01T00:00:00Z"}', type=UpdateExecutionWorkspaceBody
    )
    assert aware.cleanup_eligible_at == datetime(2020, 1, 1, tzinfo=UTC)
    for command in (UpdateExecutionWorkspace, GetWorkspaceHistory):
        field = "cleanupEligibleAt" if command is UpdateExecutionWorkspace else "at"
        raw = {"principal": {"actor": {"type": "board", "id": "k"}, "companyId": "c"},
               "workspaceId": "w", field: "2024-01-01T00:00:00"}  # fmt: skip
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(raw, command, from_attributes=False)
    board = world.company()
    project = world.project(board, ISOLATED)
    issue = world.issue(board, project)
    fields = {"workspace_id": str(uuid.uuid4()), "company_id": "c-acme", "project_id": project,
              "project_workspace_id": None, "source_issue_id": issue, "mode": "isolated_workspace",
              "strategy_type": "git_worktree", "provider_type": "git_worktree", "provider_ref": "/w",
              "name": "b", "cwd": "/w", "repo_url": None, "base_ref": "origin/main",
              "base_ref_sha": "s", "branch_name": "b", "branch_created": True,
              "created_worktree": True, "node_id": "local", "config": {}, "operation_id": None,
              "warnings": []}  # fmt: skip
    workspace = str(app.record_realized(WorkspaceRealization(**fields)).id)
    app.update_workspace(board, workspace, {"cleanup_eligible_at": datetime(2020, 1, 1)})
    assert app.workspaces[workspace].cleanup_eligible_at == datetime(2020, 1, 1, tzinfo=UTC)


def test_a_checkout_must_be_a_real_project_directory(
    app: WorkspaceRealizerApplication,
    world: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "clipyard-home"
    (home / "repo").mkdir(parents=True)
    monkeypatch.setenv("CLIPYARD_HOME", str(home))
    board = world.company()
    project = world.project(board, ISOLATED)
    for cwd, message in (("/", "not a project checkout"),
                         (str(Path.home()), "not a project checkout"),
                         (str(home / "repo"), "inside CLIPYARD_HOME"),
                         (str(tmp_path / "missing"), "not an existing directory")):  # fmt: skip
        with pytest.raises(InvalidInputError, match=message):
            app.create_project_workspace(board, project, {"name": "x", "cwd": cwd}, None)
    with pytest.raises(InvalidInputError, match="inside CLIPYARD_HOME"):
        app.create_project_workspace(
            board, project, {"name": "x", "repo_url": str(home / "repo")}, None
        )
    ok = world.checkout(board, project)
    with pytest.raises(InvalidInputError, match="not a project checkout"):
        app.update_project_workspace(board, project, ok, {"cwd": "/"})


async def test_another_projects_odd_checkout_does_not_block_worktrees(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any, tmp_path: Path
) -> None:
    board = world.company()
    project = world.project(board, ISOLATED)
    world.checkout(board, project)
    evil = _evil(world)
    elsewhere = world.project(evil, ISOLATED)
    # Stored before the check existed: a checkout that contains every worktree parent.
    world.checkout(evil, elsewhere, cwd=str(tmp_path))
    done = await realize(realizer, board, RealizeRequest(world.issue(board, project)))
    assert done.created


def test_credentials_and_queries_in_repo_urls_are_refused(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board, ISOLATED)
    for url in ("https://user:ghp_TOKEN@github.com/acme/web.git",
                "https://ghp_TOKEN@github.com/acme/web.git",
                "https://github.com/acme/web.git?private_token=x"):  # fmt: skip
        with pytest.raises(InvalidInputError, match="GITHUB_TOKEN"):
            app.create_project_workspace(board, project, {"name": "x", "repo_url": url}, None)
    for url in ("https://github.com/acme/web.git", "git@github.com:acme/web.git",
                "ssh://git@github.com/acme/web"):  # fmt: skip
        app.create_project_workspace(board, project, {"name": "x", "repo_url": url}, None)


def test_an_unknown_users_home_in_worktree_parent_dir_is_refused_at_save(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    bad = ISOLATED | {"workspaceStrategy": {"type": "git_worktree",
                                            "worktreeParentDir": "~nosuchuser-clipyard/x"}}  # fmt: skip
    with pytest.raises(InvalidInputError, match="unknown user"):
        world.project(board, bad)


def test_an_agents_mode_change_keeps_what_the_board_set(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board, ISOLATED)
    issue = world.issue(board, project, assignee_agent_id="agent-1")
    strategy = {"type": "git_worktree", "provisionCommand": "make setup"}
    app.update_issue(board, issue, {"settings": {"mode": "shared_workspace",
                                                 "workspaceStrategy": strategy}})  # fmt: skip
    app.update_issue(AGENT, issue, {"settings": {"mode": "isolated_workspace"}})
    assert app.issues[issue].settings == {
        "mode": "isolated_workspace",
        "workspaceStrategy": strategy,
    }
    with pytest.raises(AccessDeniedError):
        app.update_issue(AGENT, issue, {"settings": {"mode": "inherit",
                                                     "workspaceStrategy": {"provisionCommand": "x"}}})  # fmt: skip
    with pytest.raises(NotFoundError):
        app.update_issue(OTHER_AGENT, str(uuid.uuid4()), {"settings": {"mode": "inherit"}})


def test_a_project_with_open_issues_is_not_deleted(
    app: WorkspaceRealizerApplication, world: Any
) -> None:
    board = world.company()
    project = world.project(board)
    issue = world.issue(board, project)
    with pytest.raises(DependentsError, match="still open"):
        app.delete_project(board, project)
    app.update_issue(board, issue, {"status": "cancelled"})
    app.delete_project(board, project)
    assert app.projects[project].deleted
