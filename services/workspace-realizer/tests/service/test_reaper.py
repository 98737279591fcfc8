"""The terminal reaper (reference case 62; DECISIONS 3, 4)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.orchestration.reaper import reap_once

POLICY = {"enabled": True, "defaultMode": "isolated_workspace",
          "workspaceStrategy": {"type": "git_worktree", "teardownCommand": "make down"}}  # fmt: skip


@pytest.fixture
def setup(world: Any) -> dict[str, Any]:
    board = world.company()
    project = world.project(board, POLICY)
    world.checkout(board, project)
    return {"board": board, "project": project, "world": world}


async def workspace_for(
    realizer: Realizer, setup: dict[str, Any], *, status: str = "done", **issue: Any
) -> tuple[str, str]:
    issue_id = setup["world"].issue(setup["board"], setup["project"], **issue)
    done = await realize(realizer, setup["board"], RealizeRequest(issue_id))
    realizer.app.update_issue(setup["board"], issue_id, {"status": status})
    return issue_id, done.workspace_id


async def test_the_reaper_table(
    realizer: Realizer, setup: dict[str, Any], git: Any, commands: Any
) -> None:
    realizer.reaper_cooldown = timedelta(0)
    _, open_ws = await workspace_for(realizer, setup, status="in_progress")
    _, delivered = await workspace_for(realizer, setup, title="delivered")
    _, dirty = await workspace_for(realizer, setup, title="dirty")
    git.trees[realizer.app.workspaces[dirty].cwd or ""].untracked = 1
    _, unmerged = await workspace_for(realizer, setup, title="unmerged")
    tree = git.trees[realizer.app.workspaces[unmerged].cwd or ""]
    tree.ahead, tree.ancestry, tree.squash = 1, False, False
    _, squashed = await workspace_for(realizer, setup, title="squashed")
    tree = git.trees[realizer.app.workspaces[squashed].cwd or ""]
    tree.ahead, tree.ancestry, tree.squash = 2, False, True
    parent, with_child = await workspace_for(realizer, setup, title="parent")
    setup["world"].issue(setup["board"], setup["project"], parent_id=parent, title="child")
    _, held = await workspace_for(realizer, setup, title="held")
    realizer.app.run_holders[held] = {"run-1"}
    report = await reap_once(realizer)
    assert sorted(report["archived"]) == sorted([delivered, squashed])
    assert sorted(report["skippedUndelivered"]) == sorted([dirty, unmerged])
    assert report["skippedNonTerminalTree"] == [with_child]
    assert report["skippedActiveRun"] == [held]
    assert all(open_ws not in ids for ids in report.values())
    # The reaper runs no cleanup command; its archive says why it happened.
    assert commands.runs == []
    archived = realizer.app.workspaces[delivered]
    assert (archived.status, archived.cleanup_reason) == ("archived", "issue_terminal")
    assert not Path(archived.cwd or "").exists()


async def test_cooldown_and_reopen_fence(
    realizer: Realizer, setup: dict[str, Any], git: Any
) -> None:
    # Terminal less than the cooldown ago: skipped.
    _, recent = await workspace_for(realizer, setup)
    assert (await reap_once(realizer)) == {"skippedCooldown": [recent]}
    # cleanupEligibleAt set in the past overrides the cooldown.
    realizer.app.update_workspace(
        setup["board"], recent, {"cleanup_eligible_at": realizer.app.now() - timedelta(seconds=1)}
    )
    assert (await reap_once(realizer))["archived"] == [recent]
    # A workspace reopened minutes ago is left alone.
    from workspace_realizer.orchestration.reopen import reopen

    await reopen(realizer, setup["board"], recent)
    realizer.reaper_cooldown = timedelta(0)
    realizer.app.update_workspace(setup["board"], recent, {"cleanup_eligible_at": None})
    assert (await reap_once(realizer)) == {"skippedReopened": [recent]}


async def test_a_failed_cleanup_is_retried(
    realizer: Realizer, setup: dict[str, Any], git: Any
) -> None:
    realizer.reaper_cooldown = timedelta(0)
    _, workspace = await workspace_for(realizer, setup)
    git.keep_dir_on_remove = True
    assert (await reap_once(realizer)) == {"cleanupFailed": [workspace]}
    assert realizer.app.workspaces[workspace].cleanup_reason.startswith("The worktree")
    git.keep_dir_on_remove = False
    assert (await reap_once(realizer)) == {"archived": [workspace]}
    assert (await reap_once(realizer)) == {}


async def test_a_nodes_reaper_leaves_other_nodes_workspaces_alone(
    realizer: Realizer, setup: dict[str, Any], git: Any
) -> None:
    realizer.reaper_cooldown = timedelta(0)
    realizer.node_id = "nodeb"
    _, on_b = await workspace_for(realizer, setup, title="on node b")
    realizer.node_id = "local"
    _, here = await workspace_for(realizer, setup, title="here")
    report = await reap_once(realizer)
    assert report["archived"] == [here]
    assert all(on_b not in ids for ids in report.values())
    assert realizer.app.workspaces[on_b].status != "archived"
