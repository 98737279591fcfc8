"""Reference cases 44-51 (reference §10, as changed by DECISIONS 14: 45 and 46 by DECISIONS 5) through the
realizer's ``realize`` use case on real git repositories."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from natsbus import default_error_mapper
from servicekit.access import Access
from workspace_realizer.adapters.ports import HostOperationError
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize

pytestmark = pytest.mark.integration


def policy(**strategy: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "defaultMode": "isolated_workspace",
        "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"} | strategy,
    }


def an_issue(
    scene: Any, world: Any, repo: Path, title: str, **strategy: Any
) -> tuple[Access, str, str]:
    """A company's board, a project on ``repo`` with ``policy(**strategy)`` and an issue titled
    ``title`` in it: ``(board, project, issue)``."""
    board = world.company()
    project = scene.project(board, policy(**strategy), repo)
    return board, project, world.issue(board, project, title=title)


def operations(real: Realizer, workspace_id: str) -> list[Any]:
    return [real.app.operations[i] for i in real.app.operations_by_workspace[workspace_id]]


def worktrees(scene: Any, repo: Path) -> list[str]:
    listing = scene.git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in listing.splitlines() if line.startswith("worktree ")]


async def test_case44_a_diverged_branch_fails_validation_and_nothing_is_repaired(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    board, _, issue = an_issue(scene, world, repo, "Persisted work")
    done = await realize(real, board, RealizeRequest(issue))
    ws = real.app.workspaces[done.workspace_id]
    path = Path(ws.cwd or "")
    recorded_tip = scene.commit(path, {"recorded.txt": "on the recorded branch\n"})
    # Someone checks out another branch from main in the worktree and commits: the two diverge.
    scene.git(path, "checkout", "-q", "-b", "elsewhere", "main")
    live_tip = scene.commit(path, {"elsewhere.txt": "on another branch\n"})
    version = real.app.workspaces[done.workspace_id].version

    with pytest.raises(HostOperationError) as caught:
        await realize(real, board, RealizeRequest(issue))

    error = caught.value
    assert error.code == "workspace_validation_failed"
    assert error.details["reason"] == "git_worktree_branch_incoherence"
    assert (error.details["expectedBranch"], error.details["actualBranch"]) == (
        ws.branch_name,
        "elsewhere",
    )
    assert error.details["ancestry"] == "diverged"
    assert error.details["safeRepair"] == {
        "eligible": False,
        "attempted": False,
        "succeeded": False,
    }
    reply = default_error_mapper(error)
    assert (reply.code, reply.status, reply.details["ancestry"]) == (
        "workspace_validation_failed",
        422,
        "diverged",
    )
    # Nothing was repaired: the worktree, both branches and the record are as they were.
    assert scene.git(path, "symbolic-ref", "--short", "HEAD") == "elsewhere"
    assert scene.git(path, "rev-parse", "HEAD") == live_tip
    assert scene.git(repo, "rev-parse", f"refs/heads/{ws.branch_name}") == recorded_tip
    assert real.app.workspaces[done.workspace_id].version == version


async def test_case45_branch_from_the_template_in_clipyard_home(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    board = world.company("c-pap", "PAP")
    project = scene.project(board, policy(branchTemplate="{{issue.identifier}}-{{slug}}"), repo)
    issue = world.issue(board, project, identifier="PAP-447", title="Add Worktree Support")

    done = await realize(real, board, RealizeRequest(issue))

    ws = real.app.workspaces[done.workspace_id]
    branch = "PAP-447-add-worktree-support"
    # DECISIONS 5: $CLIPYARD_HOME/worktrees/<projectWorkspaceId>/<branch>, outside the repository.
    expected = real.home / "worktrees" / scene.checkout_of(project) / branch
    assert (ws.branch_name, ws.cwd) == (branch, str(expected))
    assert scene.git(expected, "symbolic-ref", "--short", "HEAD") == branch
    assert str(expected) in worktrees(scene, repo)
    assert not expected.is_relative_to(repo)
    assert scene.git(repo, "status", "--porcelain", "--untracked-files=all") == ""


async def test_case46_illegal_names_fall_back_and_long_ones_are_cut(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    board = world.company()
    illegal = scene.project(board, policy(branchTemplate="{{issue.title}}"), repo)
    nothing_left = world.issue(board, illegal, title="*** ??? ~~~")
    done = await realize(real, board, RealizeRequest(nothing_left))
    ws = real.app.workspaces[done.workspace_id]
    # DECISIONS 5: the fallback name is clipyard-work.
    assert ws.branch_name == "clipyard-work"
    assert scene.git(Path(ws.cwd or ""), "symbolic-ref", "--short", "HEAD") == "clipyard-work"
    assert Path(ws.cwd or "").name == "clipyard-work"

    title = " ".join(["word"] * 35)
    long = world.issue(board, scene.project(board, policy(), repo, name="second"), title=title)
    done = await realize(real, board, RealizeRequest(long))
    ws = real.app.workspaces[done.workspace_id]
    branch = ws.branch_name or ""
    assert len(branch) <= 120
    assert len(branch) >= 115
    assert ("ACME-2-" + "-".join(["word"] * 35)).startswith(branch)
    assert scene.git(Path(ws.cwd or ""), "symbolic-ref", "--short", "HEAD") == branch
    assert scene.git(repo, "rev-parse", "--verify", f"refs/heads/{branch}")


async def test_case47_an_ordinary_directory_at_the_worktree_path_is_refused(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    board, project, issue = an_issue(scene, world, repo, "Blocked path")
    path = real.home / "worktrees" / scene.checkout_of(project) / "ACME-1-blocked-path"
    path.mkdir(parents=True)
    (path / "keep.txt").write_text("not a worktree\n")

    with pytest.raises(HostOperationError) as caught:
        await realize(real, board, RealizeRequest(issue))

    assert caught.value.code == "workspace_validation_failed"
    assert "already exists and is not a reusable git worktree" in str(caught.value)
    assert "(path is not registered in `git worktree list`)" in str(caught.value)
    assert (path / "keep.txt").read_text() == "not a worktree\n"
    assert sorted(p.name for p in path.iterdir()) == ["keep.txt"]
    assert scene.git(repo, "branch", "--list", "ACME-1-blocked-path") == ""
    assert real.app.workspaces == {}


async def test_case48_an_existing_branch_is_attached_and_never_claimed(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    board, _, issue = an_issue(scene, world, repo, "Stale branch")
    # A branch left behind by a killed run: it exists, and no worktree has it checked out.
    scene.git(repo, "checkout", "-q", "-b", "ACME-1-stale-branch")
    stale_tip = scene.commit(repo, {"stale.txt": "from a killed run\n"})
    scene.git(repo, "checkout", "-q", "main")

    done = await realize(real, board, RealizeRequest(issue))

    ws = real.app.workspaces[done.workspace_id]
    path = Path(ws.cwd or "")
    assert scene.git(path, "rev-parse", "HEAD") == stale_tip
    assert (path / "stale.txt").read_text() == "from a killed run\n"
    assert ws.branch_created is False
    add = [o for o in operations(real, done.workspace_id) if "worktree add" in o.command]
    assert [o.metadata["reusedExistingBranch"] for o in add] == [True]
    assert "-b" not in add[0].command.split()
    # Archiving never deletes a branch Clipyard did not create.
    real.app.update_issue(board, issue, {"status": "done"})
    from workspace_realizer.orchestration.archive import archive

    await archive(real, board, done.workspace_id)
    assert real.app.workspaces[done.workspace_id].status == "archived"
    assert not path.exists()
    assert scene.git(repo, "rev-parse", "refs/heads/ACME-1-stale-branch") == stale_tip
    last: Any = list(real.app.events.get(UUID(done.workspace_id)))[-1]
    assert (last.branch_deleted, last.branch_kept_reason) == (
        False,
        "Clipyard did not create this branch",
    )


async def test_case49_the_base_is_origin_after_a_fetch(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    scene.commit(repo, {"unpushed.txt": "local only\n"}, "unpushed")
    upstream = scene.push_upstream(repo, {"upstream.txt": "new\n"})
    assert scene.git(repo, "rev-parse", "origin/main") != upstream  # not fetched yet
    board, _, issue = an_issue(scene, world, repo, "Fresh base")

    done = await realize(real, board, RealizeRequest(issue))

    ws = real.app.workspaces[done.workspace_id]
    path = Path(ws.cwd or "")
    assert (ws.base_ref, ws.base_ref_sha) == ("origin/main", upstream)
    assert scene.git(path, "rev-parse", "HEAD") == upstream
    assert (path / "upstream.txt").is_file()
    assert not (path / "unpushed.txt").exists()
    assert done.warnings == []
    fetches = [o for o in operations(real, done.workspace_id) if o.command.startswith("git fetch")]
    assert [(o.phase, o.status) for o in fetches] == [("worktree_prepare", "succeeded")]


async def test_case49_a_local_base_without_origin_counterpart_warns(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    scene.git(repo, "checkout", "-q", "-b", "feature-base")
    local = scene.commit(repo, {"feature.txt": "local\n"})
    scene.git(repo, "checkout", "-q", "main")
    board, _, issue = an_issue(scene, world, repo, "On a local base", baseRef="feature-base")

    done = await realize(real, board, RealizeRequest(issue))

    ws = real.app.workspaces[done.workspace_id]
    assert (ws.base_ref, ws.base_ref_sha) == ("feature-base", local)
    assert scene.git(Path(ws.cwd or ""), "rev-parse", "HEAD") == local
    (warning,) = done.warnings
    assert "no matching origin/feature-base" in warning
    assert "unpushed commits" in warning


async def test_case50_an_unstarted_worktree_is_reset_to_the_new_base_on_reuse(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    board, _, issue = an_issue(scene, world, repo, "Not started")
    done = await realize(real, board, RealizeRequest(issue))
    path = Path(real.app.workspaces[done.workspace_id].cwd or "")
    upstream = scene.push_upstream(repo, {"upstream.txt": "new\n"})

    again = await realize(real, board, RealizeRequest(issue))

    assert (again.workspace_id, again.created) == (done.workspace_id, False)
    assert scene.git(path, "rev-parse", "HEAD") == upstream
    assert (path / "upstream.txt").is_file()
    resets = [o for o in operations(real, done.workspace_id) if o.command.startswith("git reset")]
    assert [o.metadata["refreshedUnstartedWorktree"] for o in resets] == [True]


async def test_case50_a_worktree_with_an_untracked_file_is_not_reset(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    board, _, issue = an_issue(scene, world, repo, "Started")
    done = await realize(real, board, RealizeRequest(issue))
    path = Path(real.app.workspaces[done.workspace_id].cwd or "")
    head = scene.git(path, "rev-parse", "HEAD")
    (path / "scratch.txt").write_text("mine\n")
    scene.push_upstream(repo, {"upstream.txt": "new\n"})

    again = await realize(real, board, RealizeRequest(issue))

    assert scene.git(path, "rev-parse", "HEAD") == head
    assert (path / "scratch.txt").read_text() == "mine\n"
    assert not (path / "upstream.txt").exists()
    assert any("is behind origin/main by 1 commits" in w for w in again.warnings)
    assert not any(o.command.startswith("git reset") for o in operations(real, done.workspace_id))


async def test_case51_a_fetch_failure_is_a_masked_warning_and_realization_goes_on(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    stale = scene.git(repo, "rev-parse", "origin/main")
    scene.git(repo, "remote", "set-url", "origin",
              "https://bob:pa55wordsecret@127.0.0.1:1/org/web.git?token=qtok99")  # fmt: skip
    board, _, issue = an_issue(scene, world, repo, "Offline")

    done = await realize(real, board, RealizeRequest(issue))

    assert done.created
    ws = real.app.workspaces[done.workspace_id]
    path = Path(ws.cwd or "")
    assert scene.git(path, "symbolic-ref", "--short", "HEAD") == ws.branch_name
    assert (ws.base_ref, ws.base_ref_sha) == ("origin/main", stale)
    assert done.warnings[0].startswith(
        "Could not refresh base ref origin/main before preparing the execution workspace: "
    )
    assert "127.0.0.1" in done.warnings[0]
    ops = operations(real, done.workspace_id)
    fetch = next(o for o in ops if o.command.startswith("git fetch"))
    assert fetch.status == "failed"
    recorded = " ".join(
        [*done.warnings]
        + [f"{o.command} {o.stdout_excerpt} {o.stderr_excerpt} {o.metadata}" for o in ops]
        + [
            p.read_text(errors="replace")
            for p in (real.home / "operations").rglob("*")
            if p.is_file()
        ]
    )
    for secret in ("pa55wordsecret", "qtok99"):
        assert secret not in recorded
