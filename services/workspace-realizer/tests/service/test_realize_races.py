"""Realization against archive and reopen, with fake host ports: a reuse re-checks under the
workspace's lock, a creation is retry-safe, no two open workspaces share a worktree path or
branch, and reopen restores only the rescue of the archive it undoes."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain.errors import StateConflictError
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.orchestration.reopen import reopen

PROVISIONED = {"enabled": True, "defaultMode": "isolated_workspace",
               "workspaceStrategy": {"type": "git_worktree", "provisionCommand": "make setup"}}  # fmt: skip
FIXED_BRANCH = {"enabled": True, "defaultMode": "isolated_workspace",
                "workspaceStrategy": {"type": "git_worktree", "branchTemplate": "shared-work"}}  # fmt: skip


def seed(world: Any, policy: dict[str, Any], issues: int = 1) -> tuple[Any, list[str]]:
    board = world.company()
    project = world.project(board, policy)
    world.checkout(board, project)
    return board, [world.issue(board, project, title=f"Task {n}") for n in range(issues)]


async def test_a_reuse_waits_for_the_archive_and_does_no_host_work_on_an_archived_workspace(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any, git: Any, commands: Any
) -> None:
    board, (issue,) = seed(world, PROVISIONED)
    first = await realize(realizer, board, RealizeRequest(issue))
    path = Path(app.workspaces[first.workspace_id].cwd or "")
    calls, runs = len(git.calls), len(commands.runs)
    # An archive holds the workspace's lock; a realization planned before it started waits.
    async with realizer.locks.hold(f"workspace:{first.workspace_id}"):
        racing = asyncio.create_task(realize(realizer, board, RealizeRequest(issue)))
        for _ in range(400):
            waiting = realizer.locks._users.get(f"workspace:{first.workspace_id}", 0) > 1
            if waiting or racing.done():
                break
            await asyncio.sleep(0.005)
        # It took its plan (a reuse) and now waits: nothing ran on the host yet.
        assert not racing.done()
        assert git.names()[calls:] == []
        # The archive starts and removes the worktree while the realization waits.
        await realizer.store(app.start_archive, first.workspace_id, trigger="manual")
        await asyncio.to_thread(shutil.rmtree, path)
    with pytest.raises(StateConflictError) as raised:
        await racing
    assert raised.value.details["executionWorkspaceId"] == first.workspace_id
    # The worktree was not rebuilt and nothing was provisioned again.
    assert "ensure_worktree" not in git.names()[calls:]
    assert len(commands.runs) == runs
    assert not path.exists()


async def test_a_creation_retried_after_a_crash_adopts_its_worktree_and_provisions(
    realizer: Realizer,
    app: WorkspaceRealizerApplication,
    world: Any,
    git: Any,
    commands: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    board, (issue,) = seed(world, PROVISIONED)

    def crash(fields: Any) -> Any:
        raise RuntimeError("the service died before recording the workspace")

    with monkeypatch.context() as patch:
        patch.setattr(app, "record_realized", crash)
        with pytest.raises(RuntimeError):
            await realize(realizer, board, RealizeRequest(issue))
    assert not app.workspaces
    assert not commands.runs
    done = await realize(realizer, board, RealizeRequest(issue))
    ws = app.workspaces[done.workspace_id]
    # The retry found the tree it created (on the planned branch, at its base, unrecorded).
    assert git.names().count("ensure_worktree") == 2
    assert (ws.branch_created, ws.provision_state) == (True, "succeeded")
    assert [run["command"] for run in commands.runs] == ["make setup"]
    assert commands.runs[0]["env"]["CLIPYARD_WORKSPACE_CREATED"] == "true"


async def test_an_interrupted_provision_runs_again_at_the_next_realization(
    realizer: Realizer,
    app: WorkspaceRealizerApplication,
    world: Any,
    commands: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    board, (issue,) = seed(world, PROVISIONED)
    run = commands.run

    async def cancelled(**kwargs: Any) -> Any:
        commands.runs.append({"command": kwargs["command"], "cancelled": True})
        raise asyncio.CancelledError

    monkeypatch.setattr(commands, "run", cancelled)
    with pytest.raises(asyncio.CancelledError):
        await realize(realizer, board, RealizeRequest(issue))
    (ws,) = app.workspaces.values()
    assert ws.provision_state == "none"
    monkeypatch.setattr(commands, "run", run)
    again = await realize(realizer, board, RealizeRequest(issue))
    assert (again.workspace_id, again.created) == (str(ws.id), False)
    assert app.workspaces[str(ws.id)].provision_state == "succeeded"
    assert [r["command"] for r in commands.runs] == ["make setup", "make setup"]
    # Provisioned now: a plain reuse does not run it again.
    await realize(realizer, board, RealizeRequest(issue))
    assert len(commands.runs) == 2


async def test_no_two_open_workspaces_share_a_worktree_path_or_branch(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any, git: Any
) -> None:
    board, (one, two, three) = seed(world, FIXED_BRANCH, issues=3)
    app.update_issue(board, one, {"status": "cancelled"})
    first = await realize(realizer, board, RealizeRequest(one))
    path = Path(app.workspaces[first.workspace_id].cwd or "")
    tree = git.trees[str(path)]
    tree.untracked, tree.ahead, tree.head = 1, 1, "c1"  # undelivered: the branch is kept
    git.branches["shared-work"] = "c1"
    await archive(realizer, board, first.workspace_id)
    assert app.workspaces[first.workspace_id].status == "archived"
    # A second issue realizes at the same path on the kept branch.
    second = await realize(realizer, board, RealizeRequest(two))
    assert app.workspaces[second.workspace_id].cwd == str(path)
    # Reopening the first would lay its rescue over the second's tree: refused, naming it.
    calls = len(git.calls)
    with pytest.raises(StateConflictError) as raised:
        await reopen(realizer, board, first.workspace_id)
    assert raised.value.details["executionWorkspaceId"] == second.workspace_id
    assert second.workspace_id in str(raised.value)
    assert "restore_worktree" not in git.names()[calls:]
    assert app.workspaces[first.workspace_id].status == "archived"
    # Creating a third workspace on the same path and branch is refused the same way.
    with pytest.raises(StateConflictError) as again:
        await realize(realizer, board, RealizeRequest(three))
    assert again.value.details["executionWorkspaceId"] == second.workspace_id
    assert "ensure_worktree" not in git.names()[calls:]


async def test_reopen_restores_only_the_rescue_of_the_archive_it_undoes(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any, git: Any
) -> None:
    board, (issue,) = seed(world, FIXED_BRANCH)
    app.update_issue(board, issue, {"status": "cancelled"})
    done = await realize(realizer, board, RealizeRequest(issue))
    path = str(Path(app.workspaces[done.workspace_id].cwd or ""))
    tree = git.trees[path]
    tree.untracked, tree.ahead, tree.head = 1, 1, "c1"
    git.branches["shared-work"] = "c1"
    await archive(realizer, board, done.workspace_id)  # generation 1, rescued
    await reopen(realizer, board, done.workspace_id)  # generation 2, restores rescue 1
    assert git.calls[-1][1]["rescue"].ref.endswith("/1")
    await realize(realizer, board, RealizeRequest(issue))  # used again: the reopen fence ends
    git.trees[path].untracked = git.trees[path].ahead = 0  # committed and merged since
    await archive(realizer, board, done.workspace_id)  # generation 3: nothing to rescue
    ws = app.workspaces[done.workspace_id]
    assert [r["generation"] for r in ws.rescue_refs] == [1]
    await reopen(realizer, board, done.workspace_id)
    (restore,) = [kw for name, kw in git.calls if name == "restore_worktree"][-1:]
    assert restore["rescue"] is None
