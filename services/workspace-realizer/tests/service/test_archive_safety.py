"""Archive safety (review of the archive saga): close commands never run outside the workspace's
own worktree, the rescue decision is taken right before the removal, and an interrupted archive
never leaves a workspace ``closing`` for good."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from realizer_git_helpers import git

from workspace_realizer.app import recovering
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.orchestration.recovery import fail_interrupted_archives

DESTROY = 'rm -rf "$CLIPYARD_WORKSPACE_CWD"'
WORKTREE = {"enabled": True, "defaultMode": "isolated_workspace",
            "workspaceStrategy": {"type": "git_worktree", "baseRef": "main",
                                  "teardownCommand": DESTROY}}  # fmt: skip
SHARED = {"enabled": True, "defaultMode": "shared_workspace",
          "workspaceStrategy": {"type": "project_primary", "teardownCommand": DESTROY}}  # fmt: skip


async def _realized(real: Realizer, world: Any, repo: Path, policy: dict[str, Any]) -> Any:
    board = world.company()
    project = world.project(board, policy)
    real.app.create_project_workspace(board, project, {"name": "web", "cwd": str(repo)}, None)
    issue = world.issue(board, project, title="Add login")
    done = await realize(real, board, RealizeRequest(issue))
    real.app.update_issue(board, issue, {"status": "done"})
    return board, done.workspace_id


@pytest.mark.integration
async def test_a_teardown_never_runs_in_the_project_checkout_when_the_worktree_is_gone(
    real: Realizer, world: Any, repo: Path
) -> None:
    board, workspace_id = await _realized(real, world, repo, WORKTREE)
    path = Path(real.app.workspaces[workspace_id].cwd or "")
    git(repo, "worktree", "remove", "--force", str(path))
    await archive(real, board, workspace_id)
    ws = real.app.workspaces[workspace_id]
    assert ws.status == "archived"
    assert (repo / "README.md").read_text() == "# web\n"
    assert "no longer exists" in (ws.cleanup_reason or "")


@pytest.mark.integration
async def test_a_shared_workspace_archive_runs_no_command_and_keeps_the_checkout(
    real: Realizer, world: Any, repo: Path
) -> None:
    board, workspace_id = await _realized(real, world, repo, SHARED)
    assert real.app.workspaces[workspace_id].provider_type == "local_fs"
    await archive(real, board, workspace_id)
    ws = real.app.workspaces[workspace_id]
    assert ws.status == "archived"
    assert (repo / "README.md").read_text() == "# web\n"
    assert "removes only the record" in (ws.cleanup_reason or "")


@pytest.mark.integration
async def test_a_file_written_during_the_teardown_is_rescued(
    real: Realizer, world: Any, repo: Path
) -> None:
    late = {**WORKTREE, "workspaceStrategy": {**WORKTREE["workspaceStrategy"],
                                              "teardownCommand": "echo late > late.txt"}}  # fmt: skip
    board, workspace_id = await _realized(real, world, repo, late)
    path = Path(real.app.workspaces[workspace_id].cwd or "")
    assert git(path, "status", "--porcelain") == ""  # clean and delivered when inspected
    await archive(real, board, workspace_id)
    ws = real.app.workspaces[workspace_id]
    assert ws.status == "archived"
    assert not path.exists()
    (rescue,) = ws.rescue_refs
    assert rescue["fileCount"] == 1
    assert git(repo, "show", f"{rescue['ref']}:late.txt") == "late"


@pytest.mark.integration
async def test_a_clean_delivered_worktree_keeps_no_rescue_ref(
    real: Realizer, world: Any, repo: Path
) -> None:
    quiet = {**WORKTREE, "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"}}
    board, workspace_id = await _realized(real, world, repo, quiet)
    await archive(real, board, workspace_id)
    ws = real.app.workspaces[workspace_id]
    assert (ws.status, ws.rescue_refs) == ("archived", [])
    # Nor is a ref left behind in git that no one would ever list.
    assert git(repo, "for-each-ref", "refs/clipyard/") == ""


async def test_a_cancelled_archive_fails_at_its_generation_and_can_be_retried(
    realizer: Realizer, world: Any, supervisor: Any
) -> None:
    board = world.company()
    project = world.project(board, WORKTREE)
    world.checkout(board, project)
    issue = world.issue(board, project)
    done = await realize(realizer, board, RealizeRequest(issue))
    realizer.app.update_issue(board, issue, {"status": "done"})
    entered, never = asyncio.Event(), asyncio.Event()

    async def hanging_stop(company_id: str, workspace_id: str, generation: int) -> int:
        entered.set()
        await never.wait()
        return 0

    stuck = dataclasses.replace(realizer, stop_services=hanging_stop)
    task = asyncio.create_task(archive(stuck, board, done.workspace_id))
    await entered.wait()
    assert realizer.app.workspaces[done.workspace_id].closing
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    ws = realizer.app.workspaces[done.workspace_id]
    assert (ws.status, ws.closing, ws.cleanup_reason, ws.lifecycle_generation) == (
        "cleanup_failed",
        False,
        "interrupted",
        1,
    )
    await archive(realizer, board, done.workspace_id)
    assert realizer.app.workspaces[done.workspace_id].status == "archived"


async def test_the_service_start_fails_archives_left_closing(
    realizer: Realizer, world: Any, executor: Any
) -> None:
    board = world.company()
    project = world.project(board, WORKTREE)
    world.checkout(board, project)
    issue = world.issue(board, project)
    done = await realize(realizer, board, RealizeRequest(issue))
    other = await realize(realizer, board, RealizeRequest(world.issue(board, project)))
    # A crash right after ArchiveStarted: nothing else was recorded.
    assert realizer.app.start_archive(done.workspace_id, trigger="manual") == 1
    registered: list[Any] = []

    async def register(runtime: Any) -> None:
        registered.append(runtime.app.workspaces[done.workspace_id].status)

    settings = type("Settings", (), {"node_id": "local"})()
    runtime = type(
        "Runtime",
        (),
        {"app": realizer.app, "store": staticmethod(executor.run), "settings": settings},
    )()
    await recovering(register)(runtime)
    ws = realizer.app.workspaces[done.workspace_id]
    assert (ws.status, ws.closing, ws.cleanup_reason) == ("cleanup_failed", False, "interrupted")
    assert registered == ["cleanup_failed"]  # failed before the endpoints and the reaper start
    assert realizer.app.workspaces[other.workspace_id].status == "active"
    assert fail_interrupted_archives(realizer.app, "workspace-realizer") == []
    # Another node's archive left closing is that node's to fail, not this one's.
    assert realizer.app.start_archive(other.workspace_id, trigger="manual") == 1
    assert fail_interrupted_archives(realizer.app, "workspace-realizer", "nodeb") == []
    assert realizer.app.workspaces[other.workspace_id].closing
    realizer.app.update_issue(board, issue, {"status": "done"})
    await archive(realizer, board, done.workspace_id)
    assert realizer.app.workspaces[done.workspace_id].status == "archived"
