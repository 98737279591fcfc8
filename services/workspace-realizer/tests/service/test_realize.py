"""Realization with fake host ports (reference §5; DECISIONS 1, 5, 6)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from servicekit.access import AccessDeniedError
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain.errors import (
    HostStepError,
    InvalidInputError,
    RequiresProjectError,
    StateConflictError,
)
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.orchestration.steps import read_output

ISOLATED = {"enabled": True, "defaultMode": "isolated_workspace", "allowIssueOverride": True,
            "workspaceStrategy": {"type": "git_worktree", "provisionCommand": "make setup"}}  # fmt: skip


@pytest.fixture
def seeded(world: Any) -> dict[str, Any]:
    board = world.company()
    project = world.project(board, ISOLATED)
    checkout = world.checkout(board, project)
    issue = world.issue(board, project, title="Add Worktree Support")
    return {"board": board, "project": project, "checkout": checkout, "issue": issue}


async def test_an_isolated_realization_creates_a_worktree_and_provisions_once(
    realizer: Realizer,
    app: WorkspaceRealizerApplication,
    seeded: dict[str, Any],
    git: Any,
    commands: Any,
) -> None:
    board, issue = seeded["board"], seeded["issue"]
    # First realization: a worktree under $CLIPYARD_HOME/worktrees/<projectWorkspaceId>/<branch>.
    done = await realize(realizer, board, RealizeRequest(issue), "op-1")
    assert done.created
    ws = app.workspaces[done.workspace_id]
    expected = realizer.home / "worktrees" / seeded["checkout"] / "ACME-1-add-worktree-support"
    assert (ws.cwd, ws.branch_name, ws.base_ref, ws.node_id) == (
        str(expected),
        "ACME-1-add-worktree-support",
        "origin/main",
        "local",
    )
    assert (ws.mode, ws.provider_type, ws.branch_created, ws.provision_state) == (
        "isolated_workspace",
        "git_worktree",
        True,
        "succeeded",
    )
    assert app.issues[issue].execution_workspace_id == done.workspace_id
    # The provision command ran once, in the worktree, with the CLIPYARD_WORKSPACE_* environment.
    (run,) = commands.runs
    assert (run["command"], run["cwd"]) == ("make setup", expected)
    env = run["env"]
    assert env["CLIPYARD_WORKSPACE_CWD"] == env["CLIPYARD_WORKSPACE_PATH"] == str(expected)
    assert (env["CLIPYARD_WORKSPACE_BRANCH"], env["CLIPYARD_WORKSPACE_CREATED"]) == (
        "ACME-1-add-worktree-support",
        "true",
    )
    assert (
        env["CLIPYARD_WORKSPACE_BASE_CWD"]
        == env["CLIPYARD_WORKSPACE_REPO_ROOT"]
        == str(realizer.home.parent / "repo")
    )
    assert (env["CLIPYARD_WORKSPACE_REPO_REF"], env["CLIPYARD_WORKSPACE_REPO_URL"]) == (
        "origin/main",
        "",
    )
    assert (
        env["CLIPYARD_ISSUE_IDENTIFIER"],
        env["CLIPYARD_ISSUE_ID"],
        env["CLIPYARD_COMPANY_ID"],
    ) == ("ACME-1", issue, "c-acme")
    assert env["CLIPYARD_PROJECT_ID"] == seeded["project"]
    # Every host step is a workspace operation with its output kept in files.
    ops = [app.operations[i] for i in app.operations_by_workspace[done.workspace_id]]
    assert [o.phase for o in ops] == ["worktree_prepare", "worktree_prepare", "workspace_provision"]
    assert {o.operation_id for o in ops} == {"op-1"}
    assert done.operation_ids == [str(o.id) for o in ops]
    assert ops[2].stdout_excerpt == "ran make setup\n"
    assert read_output(realizer.home, str(ops[2].id), "stdout", 4, 4) == (b"make", 15)
    # Reuse: same workspace, no new worktree, no provision (DECISIONS 1).
    again = await realize(realizer, board, RealizeRequest(issue))
    assert (again.workspace_id, again.created) == (done.workspace_id, False)
    assert len(commands.runs) == 1


async def test_a_missing_worktree_is_rebuilt_and_provisioned_again(
    realizer: Realizer, seeded: dict[str, Any], commands: Any, git: Any
) -> None:
    done = await realize(realizer, seeded["board"], RealizeRequest(seeded["issue"]))
    path = Path(realizer.app.workspaces[done.workspace_id].cwd or "")
    path.rmdir()
    again = await realize(realizer, seeded["board"], RealizeRequest(seeded["issue"]))
    assert (again.workspace_id, again.created) == (done.workspace_id, False)
    assert len(commands.runs) == 2
    assert commands.runs[1]["env"]["CLIPYARD_WORKSPACE_CREATED"] == "true"
    assert path.is_dir()


async def test_a_failed_provision_keeps_the_workspace_and_runs_again_next_time(
    realizer: Realizer, app: WorkspaceRealizerApplication, seeded: dict[str, Any], commands: Any
) -> None:
    commands.exit_codes["make setup"] = 2
    with pytest.raises(HostStepError, match="exit code 2: boom") as failed:
        await realize(realizer, seeded["board"], RealizeRequest(seeded["issue"]))
    workspace_id = failed.value.details["workspaceId"]
    assert app.workspaces[workspace_id].provision_state == "failed"
    commands.exit_codes.clear()
    again = await realize(realizer, seeded["board"], RealizeRequest(seeded["issue"]))
    assert again.workspace_id == workspace_id
    assert len(commands.runs) == 2
    assert app.workspaces[workspace_id].provision_state == "succeeded"


async def test_stale_branches_are_attached_and_not_claimed(
    realizer: Realizer, app: WorkspaceRealizerApplication, seeded: dict[str, Any], git: Any
) -> None:
    # A branch left behind by a killed run (DECISIONS 6): attached, so Clipyard never deletes it.
    git.branches["ACME-1-add-worktree-support"] = "old"
    done = await realize(realizer, seeded["board"], RealizeRequest(seeded["issue"]))
    assert not app.workspaces[done.workspace_id].branch_created


async def test_shared_and_agent_default_modes_make_no_worktree(
    realizer: Realizer,
    app: WorkspaceRealizerApplication,
    seeded: dict[str, Any],
    git: Any,
    commands: Any,
) -> None:
    shared = await realize(
        realizer, seeded["board"], RealizeRequest(seeded["issue"], mode="shared_workspace")
    )
    ws = app.workspaces[shared.workspace_id]
    assert (ws.mode, ws.provider_type, ws.cwd, ws.branch_name) == (
        "shared_workspace",
        "local_fs",
        str(realizer.home.parent / "repo"),
        None,
    )
    adapter = await realize(
        realizer, seeded["board"], RealizeRequest(seeded["issue"], mode="agent_default")
    )
    ws = app.workspaces[adapter.workspace_id]
    assert (ws.mode, ws.provider_type, ws.cwd) == ("adapter_managed", "adapter_managed", None)
    assert "ensure_worktree" not in git.names()
    assert commands.runs == []


async def test_a_pinned_workspace_is_reused_or_the_failure_named(
    realizer: Realizer, world: Any, seeded: dict[str, Any]
) -> None:
    board, project = seeded["board"], seeded["project"]
    first = await realize(realizer, board, RealizeRequest(seeded["issue"]))
    other = world.issue(board, project, title="Other")
    pinned = await realize(
        realizer,
        board,
        RealizeRequest(other, mode="reuse_existing", workspace_id=first.workspace_id),
    )
    assert (pinned.workspace_id, pinned.created) == (first.workspace_id, False)
    assert realizer.app.issues[other].execution_workspace_id == first.workspace_id
    generation = realizer.app.start_archive(first.workspace_id, trigger="manual")
    realizer.app.fail_cleanup(
        first.workspace_id, generation, error="x", rescue_ref=None, operation_id=None
    )
    with pytest.raises(StateConflictError, match="cannot be reused: it is cleanup_failed"):
        await realize(
            realizer,
            board,
            RealizeRequest(other, mode="reuse_existing", workspace_id=first.workspace_id),
        )
    with pytest.raises(InvalidInputError):
        await realize(realizer, board, RealizeRequest(other, mode="reuse_existing"))


async def test_refusals_before_any_host_work(
    realizer: Realizer, world: Any, git: Any, tmp_path: Path
) -> None:
    board = world.company()
    bare = world.project(board, ISOLATED)
    with pytest.raises(RequiresProjectError):
        await realize(realizer, board, RealizeRequest(world.issue(board, bare)))
    # A worktree parent inside the project checkout is refused (DECISIONS 5).
    inside = ISOLATED | {
        "workspaceStrategy": {
            "type": "git_worktree",
            "worktreeParentDir": str(tmp_path / "repo" / "trees"),
        }
    }
    project = world.project(board, inside)
    world.checkout(board, project)
    with pytest.raises(InvalidInputError, match="inside the project checkout"):
        await realize(realizer, board, RealizeRequest(world.issue(board, project)))
    assert "ensure_worktree" not in git.names()


async def test_a_worktree_parent_is_checked_again_on_the_host_that_makes_the_worktree(
    realizer: Realizer, world: Any, git: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Saved where the path did not lead anywhere else yet (the company-wide part may run on
    # another host): a symlink made later inside the allowed root points out of it.
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (tmp_path / "repo").mkdir()
    monkeypatch.setenv("CLIPYARD_ALLOWED_ROOTS", f"{allowed}:{tmp_path / 'repo'}")
    board = world.company()
    strategy = {"type": "git_worktree", "worktreeParentDir": str(allowed / "trees")}
    project = world.project(board, ISOLATED | {"workspaceStrategy": strategy})
    world.checkout(board, project)
    issue = world.issue(board, project)
    (allowed / "trees").symlink_to(outside)
    with pytest.raises(AccessDeniedError, match="worktreeParentDir"):
        await realize(realizer, board, RealizeRequest(issue))
    assert "ensure_worktree" not in git.names()
    assert list(outside.iterdir()) == []


async def test_a_repo_only_checkout_is_cloned_when_missing(
    realizer: Realizer, app: WorkspaceRealizerApplication, world: Any, git: Any
) -> None:
    board = world.company()
    project = world.project(board, ISOLATED)
    checkout = str(
        app.create_project_workspace(
            board, project, {"name": "api", "repo_url": "https://github.com/acme/api.git"}, None
        ).id
    )
    issue = world.issue(board, project)
    done = await realize(realizer, board, RealizeRequest(issue))
    pw = app.project_workspaces[checkout]
    target = realizer.home / "checkouts" / project / checkout / "api"
    assert (pw.checkout_state, pw.checkout_path) == ("ready", str(target))
    assert app.workspaces[done.workspace_id].repo_url == "https://github.com/acme/api.git"
    assert [n for n in git.names() if n == "managed_clone"] == ["managed_clone"]


async def test_twenty_concurrent_realizations_get_distinct_worktrees(
    realizer: Realizer, world: Any, seeded: dict[str, Any]
) -> None:
    issues = [world.issue(seeded["board"], seeded["project"], title=f"task {n}") for n in range(20)]
    done = await asyncio.gather(
        *(realize(realizer, seeded["board"], RealizeRequest(i)) for i in issues)
    )
    paths = {realizer.app.workspaces[d.workspace_id].cwd for d in done}
    assert len(paths) == 20
    assert all(Path(p or "").is_dir() for p in paths)
