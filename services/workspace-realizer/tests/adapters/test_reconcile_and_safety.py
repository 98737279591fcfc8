"""Branch reconcile (reference §5.6, modest) and the never-delete-a-checkout rule (case 58)."""

from __future__ import annotations

from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder, commit, git

from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import HostOperationError, WorktreeOutcome
from workspace_realizer.adapters.safety import removal_refusal, remove_local_directory

pytestmark = pytest.mark.integration


async def worktree(host: HostGit, repo: Path, home: Path, branch: str = "b1") -> WorktreeOutcome:
    steps = StepRecorder()
    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
    return await host.ensure_worktree(
        repo_root=repo, path=home / "wt" / branch, branch=branch, base=base, sink=steps
    )


async def test_forward_when_recorded_is_an_ancestor(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    wt = await worktree(host, repo, home)
    recorded = git(wt.path, "rev-parse", "HEAD")
    git(wt.path, "checkout", "-q", "-b", "b1-continued")
    live = commit(wt.path, {"f.txt": "f\n"})

    outcome = await host.reconcile_branch(
        repo_root=repo, path=wt.path, recorded_branch="b1", mode="forward", rescue_ref=None,
        sink=steps,
    )  # fmt: skip

    assert outcome.ancestry_verdict == "ancestor"
    assert outcome.cleanliness == "clean"
    assert (outcome.from_branch, outcome.to_branch) == ("b1", "b1-continued")
    assert (outcome.from_sha, outcome.to_sha) == (recorded, live)
    assert outcome.rescue is None
    assert steps.steps == []


async def test_forward_refused_when_diverged(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    wt = await worktree(host, repo, home)
    commit(wt.path, {"a.txt": "recorded line\n"})
    git(wt.path, "checkout", "-q", "-b", "other", "main")
    commit(wt.path, {"b.txt": "other line\n"})
    with pytest.raises(HostOperationError) as caught:
        await host.reconcile_branch(
            repo_root=repo, path=wt.path, recorded_branch="b1", mode="forward", rescue_ref=None,
            sink=steps,
        )  # fmt: skip
    assert caught.value.code == "state_conflict"
    assert caught.value.details["ancestry"] == "diverged"
    # override needs no ancestry
    outcome = await host.reconcile_branch(
        repo_root=repo, path=wt.path, recorded_branch="b1", mode="override", rescue_ref=None,
        sink=steps,
    )  # fmt: skip
    assert outcome.to_branch == "other"
    assert outcome.ancestry_verdict == "diverged"


async def test_quarantine_restore_rescues_and_returns_to_the_recorded_branch(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app", {"a.txt": "a\n"})
    wt = await worktree(host, repo, home)
    recorded = git(wt.path, "rev-parse", "HEAD")
    git(wt.path, "checkout", "-q", "-b", "stray")
    stray = commit(wt.path, {"s.txt": "s\n"})
    (wt.path / "a.txt").write_text("dirty\n")
    (wt.path / "new.txt").write_text("untracked\n")

    outcome = await host.reconcile_branch(
        repo_root=repo, path=wt.path, recorded_branch="b1", mode="quarantine_restore",
        rescue_ref="refs/clipyard/rescue/ws1/q1", sink=steps,
    )  # fmt: skip

    assert outcome.cleanliness == "dirty"
    assert (outcome.from_branch, outcome.to_branch) == ("stray", "b1")
    assert outcome.rescue is not None
    assert git(repo, "rev-parse", f"{outcome.rescue.sha}^") == stray
    assert git(repo, "show", f"{outcome.rescue.sha}:new.txt") == "untracked"
    assert git(wt.path, "symbolic-ref", "--short", "HEAD") == "b1"
    assert git(wt.path, "rev-parse", "HEAD") == recorded
    assert git(wt.path, "status", "--porcelain") == ""
    assert {s.phase for s in steps.steps} >= {"workspace_rescue", "branch_reconcile"}


async def test_case58_refuses_to_remove_a_checkout(tmp_path: Path) -> None:
    project = tmp_path / "runtime-dir" / "project"
    project.mkdir(parents=True)
    (project / "file.txt").write_text("keep\n")
    cleaned, warning = await remove_local_directory(tmp_path / "runtime-dir", protected=[project])
    assert cleaned is False
    assert warning is not None
    assert "Refusing to remove path" in warning
    assert (project / "file.txt").read_text() == "keep\n"
    assert removal_refusal(project, [project]) is not None


async def test_a_directory_with_its_own_git_dir_is_protected(make_repo, tmp_path: Path) -> None:
    repo = make_repo("standalone")
    cleaned, warning = await remove_local_directory(repo, protected=[])
    assert cleaned is False
    assert warning is not None
    assert ".git directory" in warning
    assert (repo / ".git").is_dir()


async def test_plain_runtime_directory_is_removed(tmp_path: Path) -> None:
    target = tmp_path / "runtime-dir"
    (target / "sub").mkdir(parents=True)
    (target / "sub" / "x.txt").write_text("x")
    cleaned, warning = await remove_local_directory(target, protected=[tmp_path / "project"])
    assert (cleaned, warning) == (True, None)
    assert not target.exists()
