"""The archive saga (ARCHITECTURE §4.4; DECISIONS 3, 4; reference cases 40, 41, 58, 59) and
reopen (DECISIONS 12), with fake host ports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workspace_realizer.adapters.ports import HostOperationError
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain.errors import (
    CloseBlockedError,
    NotReopenableError,
    ReopenPendingError,
)
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.orchestration.reopen import reopen

POLICY = {"enabled": True, "defaultMode": "isolated_workspace",
          "workspaceStrategy": {"type": "git_worktree", "teardownCommand": "make down"}}  # fmt: skip


@pytest.fixture
async def realized(realizer: Realizer, world: Any) -> dict[str, Any]:
    board = world.company()
    project = world.project(board, POLICY)
    checkout = world.checkout(board, project, cleanup_command="make clean")
    issue = world.issue(board, project)
    done = await realize(realizer, board, RealizeRequest(issue))
    ws = realizer.app.workspaces[done.workspace_id]
    return {"board": board, "issue": issue, "id": done.workspace_id, "path": Path(ws.cwd or ""),
            "branch": ws.branch_name, "checkout": checkout}  # fmt: skip


def events(app: WorkspaceRealizerApplication, workspace_id: str) -> list[str]:
    from uuid import UUID

    return [type(e).__name__ for e in app.events.get(UUID(workspace_id))]


async def test_an_open_issue_blocks_archive_and_nothing_changes(
    realizer: Realizer, realized: dict[str, Any], git: Any, supervisor: Any, commands: Any
) -> None:
    before = realizer.app.last_notification_id()
    with pytest.raises(CloseBlockedError) as blocked:
        await archive(realizer, realized["board"], realized["id"])
    assert blocked.value.status == 409
    assert blocked.value.code == "close_blocked"
    assert "still linked to 1 open issue(s): ACME-1" in str(blocked.value)
    assert blocked.value.details["closeReadiness"]["state"] == "blocked"
    assert realizer.app.last_notification_id() == before
    assert supervisor.calls == []
    assert "remove_worktree" not in git.names()
    assert commands.runs == []


async def test_a_delivered_workspace_archives_and_its_branch_goes(
    realizer: Realizer, realized: dict[str, Any], git: Any, supervisor: Any, commands: Any
) -> None:
    realizer.app.update_issue(realized["board"], realized["issue"], {"status": "done"})
    supervisor.stopped = 2
    await archive(realizer, realized["board"], realized["id"], operation_id="op-9")
    ws = realizer.app.workspaces[realized["id"]]
    assert (ws.status, ws.lifecycle_generation, ws.rescue_refs, ws.cleanup_reason) == (
        "archived",
        1,
        [],
        None,
    )
    assert not realized["path"].exists()
    assert realized["branch"] not in git.branches
    assert supervisor.calls == [("c-acme", realized["id"], 1)]
    # Cleanup commands first (workspace's, project workspace's, then teardown).
    assert [r["command"] for r in commands.runs] == ["make clean", "make down"]
    assert {r["env"]["CLIPYARD_WORKSPACE_CREATED"] for r in commands.runs} == {"false"}
    assert events(realizer.app, realized["id"])[-2:] == ["ArchiveStarted", "Archived"]
    archived = list(realizer.app.events.get(ws.id))[-1]
    assert (archived.runtime_services_stopped, archived.branch_deleted, archived.operation_id) == (
        2,
        True,
        "op-9",
    )
    # Archiving again changes nothing.
    await archive(realizer, realized["board"], realized["id"])
    assert events(realizer.app, realized["id"])[-1] == "Archived"
    assert ws.version == realizer.app.workspaces[realized["id"]].version


async def test_undelivered_work_is_rescued_the_branch_kept_and_reopen_brings_it_back(
    realizer: Realizer, realized: dict[str, Any], git: Any
) -> None:
    realizer.app.update_issue(realized["board"], realized["issue"], {"status": "cancelled"})
    tree = git.trees[str(realized["path"])]
    tree.untracked, tree.ahead, tree.head = 1, 1, "c1"
    git.branches[realized["branch"]] = "c1"
    await archive(realizer, realized["board"], realized["id"])
    ws = realizer.app.workspaces[realized["id"]]
    ref = f"refs/clipyard/rescue/{realized['id']}/1"
    assert ws.status == "archived"
    assert [r["ref"] for r in ws.rescue_refs] == [ref]
    assert ws.rescue_refs[0]["fileCount"] == 1
    assert git.branches[realized["branch"]] == "c1"
    assert "delete_branch" not in git.names()
    assert not realized["path"].exists()
    # Reopen rebuilds the worktree on its branch with the rescued changes.
    await reopen(realizer, realized["board"], realized["id"])
    ws = realizer.app.workspaces[realized["id"]]
    assert (ws.status, ws.lifecycle_generation, ws.closed_at) == ("active", 2, None)
    restored = git.trees[str(realized["path"])]
    assert (restored.head, restored.untracked) == ("c1", 1)
    assert git.calls[-1][1]["rescue"].ref == f"refs/clipyard/rescue/{realized['id']}/1"
    # Reference case 41: right after a reopen, archive is refused before any teardown.
    with pytest.raises(ReopenPendingError):
        await archive(realizer, realized["board"], realized["id"])
    assert ws.version == realizer.app.workspaces[realized["id"]].version
    with pytest.raises(NotReopenableError):
        await reopen(realizer, realized["board"], realized["id"])


async def test_cleanup_that_cannot_be_verified_is_cleanup_failed(
    realizer: Realizer, realized: dict[str, Any], git: Any, supervisor: Any
) -> None:
    realizer.app.update_issue(realized["board"], realized["issue"], {"status": "done"})
    # The supervisor does not answer: nothing is destroyed.
    supervisor.error = RuntimeError("no responders")
    await archive(realizer, realized["board"], realized["id"])
    ws = realizer.app.workspaces[realized["id"]]
    assert ws.status == "cleanup_failed"
    assert "runtime services: no responders" in (ws.cleanup_reason or "")
    assert realized["path"].exists()
    # The worktree stays on disk: cleanup_failed again, the branch untouched (DECISIONS 4).
    supervisor.error = None
    git.keep_dir_on_remove = True
    await archive(realizer, realized["board"], realized["id"])
    ws = realizer.app.workspaces[realized["id"]]
    assert ws.status == "cleanup_failed"
    assert "still on disk" in (ws.cleanup_reason or "")
    assert realized["branch"] in git.branches
    # Then it goes: archived at generation 3.
    git.keep_dir_on_remove = False
    await archive(realizer, realized["board"], realized["id"])
    assert (
        realizer.app.workspaces[realized["id"]].status,
        realizer.app.workspaces[realized["id"]].lifecycle_generation,
    ) == ("archived", 3)


async def test_a_rescue_that_fails_stops_the_saga(
    realizer: Realizer, realized: dict[str, Any], git: Any
) -> None:
    realizer.app.update_issue(realized["board"], realized["issue"], {"status": "done"})
    git.trees[str(realized["path"])].dirty = 3
    git.fail["write_rescue_ref"] = HostOperationError("disk full")
    await archive(realizer, realized["board"], realized["id"])
    ws = realizer.app.workspaces[realized["id"]]
    assert ws.status == "cleanup_failed"
    assert "nothing was removed: disk full" in (ws.cleanup_reason or "")
    assert realized["path"].exists()
    assert "remove_worktree" not in git.names()


async def test_failing_commands_and_a_refused_branch_delete_are_warnings(
    realizer: Realizer, realized: dict[str, Any], git: Any, commands: Any
) -> None:
    # Reference case 59: the branch delete is refused; cleanup still succeeds, with a warning.
    realizer.app.update_issue(realized["board"], realized["issue"], {"status": "done"})
    commands.exit_codes["make down"] = 1
    git.refuse_branch_delete = True
    await archive(realizer, realized["board"], realized["id"])
    ws = realizer.app.workspaces[realized["id"]]
    assert ws.status == "archived"
    assert "Teardown command failed with exit code 1." in (ws.cleanup_reason or "")
    assert "Skipped deleting branch" in (ws.cleanup_reason or "")
    assert realized["branch"] in git.branches


async def test_a_worktree_that_contains_a_project_checkout_is_never_removed(
    realizer: Realizer, realized: dict[str, Any], git: Any, world: Any
) -> None:
    # Reference case 58: a project checkout inside the worktree path is protected.
    realizer.app.update_issue(realized["board"], realized["issue"], {"status": "done"})
    inner = realized["path"] / "vendored"
    inner.mkdir()
    project = world.project(realized["board"])
    realizer.app.create_project_workspace(
        realized["board"], project, {"name": "v", "cwd": str(inner)}, None
    )
    await archive(realizer, realized["board"], realized["id"])
    ws = realizer.app.workspaces[realized["id"]]
    assert ws.status == "cleanup_failed"
    assert "Refusing to remove path" in (ws.cleanup_reason or "")
    assert inner.exists()
    assert "remove_worktree" not in git.names()


async def test_a_reopen_that_cannot_rebuild_stays_closed(
    realizer: Realizer, realized: dict[str, Any], git: Any
) -> None:
    realizer.app.update_issue(realized["board"], realized["issue"], {"status": "done"})
    await archive(realizer, realized["board"], realized["id"])
    git.fail["restore_worktree"] = HostOperationError("invalid reference")
    with pytest.raises(NotReopenableError, match="invalid reference"):
        await reopen(realizer, realized["board"], realized["id"])
    ws = realizer.app.workspaces[realized["id"]]
    assert (ws.status, ws.cleanup_reason, ws.lifecycle_generation) == (
        "archived",
        "reopen_failed",
        2,
    )


async def test_a_shared_workspace_archives_its_record_only_and_detaches_its_issues(
    realizer: Realizer, world: Any, git: Any
) -> None:
    board = world.company()
    project = world.project(board)
    world.checkout(board, project)
    issue = world.issue(board, project)
    done = await realize(realizer, board, RealizeRequest(issue))
    ws = realizer.app.workspaces[done.workspace_id]
    assert ws.mode == "shared_workspace"
    # Open linked issues only warn on a shared workspace; the checkout stays untouched.
    await archive(realizer, board, done.workspace_id)
    assert realizer.app.workspaces[done.workspace_id].status == "archived"
    assert realizer.app.issues[issue].execution_workspace_id is None
    assert Path(ws.cwd or "").is_dir()
    assert not {"inspect", "remove_worktree", "write_rescue_ref"} & set(git.names())
