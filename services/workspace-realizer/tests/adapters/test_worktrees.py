"""Worktrees: create, reuse, attach, prune, refuse; removal verified (reference §5.3, §5.4;
cases 47, 48, 50; DECISIONS 4-6)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
from realizer_git_helpers import StepRecorder, commit, git, push_to_origin

from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import BaseRef, HostOperationError, WorktreeOutcome

pytestmark = pytest.mark.integration


def worktree_paths(repo: Path) -> list[str]:
    out = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


async def base_of(host: HostGit, repo: Path, steps: StepRecorder, ref: str = "main") -> BaseRef:
    return await host.resolve_base_ref(repo_root=repo, configured=ref, auth=None, sink=steps)


class Worktree(NamedTuple):
    """A repository, its base and the worktree of branch ``b1`` made from it."""

    repo: Path
    base: BaseRef
    path: Path
    outcome: WorktreeOutcome


async def worktree_b1(
    host: HostGit,
    make_repo: Callable[..., Path],
    steps: StepRecorder,
    home: Path,
    *,
    bare_origin: bool = False,
) -> Worktree:
    """A repository ``app`` and a new worktree of branch ``b1`` at ``home/worktrees/pw/b1``."""
    repo = make_repo("app", bare_origin=bare_origin)
    base = await base_of(host, repo, steps)
    path = home / "worktrees" / "pw" / "b1"
    outcome = await host.ensure_worktree(
        repo_root=repo, path=path, branch="b1", base=base, sink=steps
    )
    return Worktree(repo, base, path, outcome)


async def test_new_worktree_on_a_new_untracked_branch(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app", bare_origin=True)
    base = await base_of(host, repo, steps)
    path = home / "worktrees" / "pw1" / "PAP-1-fix"

    outcome = await host.ensure_worktree(
        repo_root=repo, path=path, branch="PAP-1-fix", base=base, sink=steps
    )

    assert outcome.created is True
    assert outcome.reused_existing_branch is False
    assert outcome.head_sha == base.sha
    assert git(path, "symbolic-ref", "--short", "HEAD") == "PAP-1-fix"
    assert git(repo, "config", "--get", "branch.PAP-1-fix.remote", check=False) == ""
    add = steps.steps[-1]
    assert add.phase == "worktree_prepare"
    assert add.command.startswith("git worktree add --no-track -b PAP-1-fix")
    assert add.metadata["created"] is True
    assert add.metadata["baseRefSha"] == base.sha
    assert str(path) in worktree_paths(repo)


async def test_branch_with_slash_nests_directories(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    base = await base_of(host, repo, steps)
    path = home / "worktrees" / "pw1" / "team" / "PAP-2"
    outcome = await host.ensure_worktree(
        repo_root=repo, path=path, branch="team/PAP-2", base=base, sink=steps
    )
    assert outcome.created is True
    assert (path / "README.md").is_file()


async def test_reuse_is_not_a_creation(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo, base, path, _ = await worktree_b1(host, make_repo, steps, home)
    (path / "work.txt").write_text("in progress\n")

    again = await host.ensure_worktree(
        repo_root=repo, path=path, branch="b1", base=base, sink=steps
    )

    assert again.created is False
    assert again.refreshed_unstarted is False
    assert (path / "work.txt").read_text() == "in progress\n"


async def test_case47_ordinary_directory_at_the_path_is_refused(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    base = await base_of(host, repo, steps)
    path = home / "worktrees" / "pw" / "b1"
    path.mkdir(parents=True)
    (path / "keep.txt").write_text("x")

    with pytest.raises(HostOperationError) as caught:
        await host.ensure_worktree(repo_root=repo, path=path, branch="b1", base=base, sink=steps)

    assert "already exists and is not a reusable git worktree" in str(caught.value)
    assert "(path is not registered in `git worktree list`)" in str(caught.value)
    assert caught.value.code == "workspace_validation_failed"
    assert (path / "keep.txt").read_text() == "x"


async def test_worktree_on_another_branch_is_incoherent(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo, base, path, _ = await worktree_b1(host, make_repo, steps, home)
    git(path, "checkout", "-q", "-b", "elsewhere")
    with pytest.raises(HostOperationError) as caught:
        await host.ensure_worktree(repo_root=repo, path=path, branch="b1", base=base, sink=steps)
    assert caught.value.details["reason"] == "git_worktree_branch_incoherence"
    assert caught.value.details["actualBranch"] == "elsewhere"


async def test_case48_stale_branch_is_attached(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    git(repo, "branch", "PAP-3-stale")
    git(repo, "checkout", "-q", "PAP-3-stale")
    stale_tip = commit(repo, {"stale.txt": "from a killed run\n"})
    git(repo, "checkout", "-q", "main")
    base = await base_of(host, repo, steps)
    path = home / "worktrees" / "pw" / "PAP-3-stale"

    outcome = await host.ensure_worktree(
        repo_root=repo, path=path, branch="PAP-3-stale", base=base, sink=steps
    )

    assert outcome.created is True
    assert outcome.reused_existing_branch is True
    assert outcome.head_sha == stale_tip
    assert (path / "stale.txt").is_file()
    assert steps.steps[-1].metadata["reusedExistingBranch"] is True


async def test_registered_but_missing_worktree_is_pruned_and_rebuilt(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo, base, path, _ = await worktree_b1(host, make_repo, steps, home)
    shutil.rmtree(path)

    outcome = await host.ensure_worktree(
        repo_root=repo, path=path, branch="b1", base=base, sink=steps
    )

    assert outcome.created is True
    assert outcome.reused_existing_branch is True
    assert "git worktree prune" in steps.commands()
    assert path.is_dir()


async def test_a_new_branch_on_a_path_still_registered_is_pruned_and_added_again(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    # The path's folder was deleted and its branch too: git still registers the path. Nothing
    # listed the worktrees first; git's refusal of the add leads to the prune and a second add.
    repo, base, path, _ = await worktree_b1(host, make_repo, steps, home)
    shutil.rmtree(path)
    git(repo, "update-ref", "-d", "refs/heads/b1")  # git's branch -D refuses: it is checked out
    steps.steps.clear()

    outcome = await host.ensure_worktree(
        repo_root=repo, path=path, branch="b1", base=base, sink=steps
    )

    assert (outcome.created, outcome.reused_existing_branch) == (True, False)
    commands = steps.commands()
    adds = [c for c in commands if c.startswith("git worktree add")]
    assert [s.status for s in steps.steps if s.command in adds] == ["failed", "succeeded"]
    assert "git worktree prune" in commands
    assert git(path, "branch", "--show-current") == "b1"
    assert outcome.head_sha == base.sha == git(path, "rev-parse", "HEAD")


async def test_branch_checked_out_elsewhere_is_refused(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    base = await base_of(host, repo, steps)
    with pytest.raises(HostOperationError, match="is not reusable"):
        await host.ensure_worktree(
            repo_root=repo, path=home / "wt" / "main", branch="main", base=base, sink=steps
        )


async def test_invalid_branch_name_is_refused(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    base = await base_of(host, repo, steps)
    with pytest.raises(HostOperationError, match="not a valid git branch name"):
        await host.ensure_worktree(
            repo_root=repo, path=home / "wt" / "x", branch="bad..name", base=base, sink=steps
        )


async def test_case50_unstarted_worktree_is_refreshed_to_the_new_base(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo, _, path, _ = await worktree_b1(host, make_repo, steps, home, bare_origin=True)
    upstream = push_to_origin(repo, {"upstream.txt": "new\n"})
    newer = await base_of(host, repo, steps)
    assert newer.sha == upstream

    outcome = await host.ensure_worktree(
        repo_root=repo, path=path, branch="b1", base=newer, sink=steps
    )

    assert outcome.created is False
    assert outcome.refreshed_unstarted is True
    assert outcome.head_sha == upstream
    assert (path / "upstream.txt").is_file()
    assert steps.steps[-1].metadata["refreshedUnstartedWorktree"] is True


async def test_case50_worktree_with_an_untracked_file_is_not_refreshed(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo, _, path, first = await worktree_b1(host, make_repo, steps, home, bare_origin=True)
    (path / "scratch.txt").write_text("mine\n")
    push_to_origin(repo, {"upstream.txt": "new\n"})
    newer = await base_of(host, repo, steps)

    outcome = await host.ensure_worktree(
        repo_root=repo, path=path, branch="b1", base=newer, sink=steps
    )

    assert outcome.refreshed_unstarted is False
    assert outcome.head_sha == first.head_sha
    assert (path / "scratch.txt").read_text() == "mine\n"
    assert any("is behind origin/main by 1 commits" in w for w in outcome.warnings)


async def test_twenty_concurrent_worktrees_on_one_repository(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app", {f"src/f{i}.txt": f"{i}\n" for i in range(50)}, bare_origin=True)

    async def realize(i: int) -> Path:
        base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
        path = home / "worktrees" / "pw" / f"PAP-{i}-task"
        outcome = await host.ensure_worktree(
            repo_root=repo, path=path, branch=f"PAP-{i}-task", base=base, sink=steps
        )
        assert outcome.created is True
        return outcome.path

    paths = await asyncio.gather(*(realize(i) for i in range(20)))

    assert len(set(paths)) == 20
    registered = worktree_paths(repo)
    branches = set(git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads").split())
    for i, path in enumerate(paths):
        assert str(path) in registered
        assert git(path, "symbolic-ref", "--short", "HEAD") == f"PAP-{i}-task"
        assert f"PAP-{i}-task" in branches
    assert all(s.status == "succeeded" for s in steps.steps)
    assert "lock" not in steps.text().lower()


async def test_remove_worktree_is_verified(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo, _, path, _ = await worktree_b1(host, make_repo, steps, home)
    (path / "dirty.txt").write_text("x")

    removed = await host.remove_worktree(repo_root=repo, path=path, sink=steps)

    assert removed is True
    assert not path.exists()
    assert str(path) not in worktree_paths(repo)
    assert steps.steps[-1].command.startswith("git worktree remove --force")
    assert steps.steps[-1].phase == "worktree_cleanup"
    # Already gone: still verified as removed; a missing registration is pruned.
    assert await host.remove_worktree(repo_root=repo, path=path, sink=steps) is True


async def test_remove_of_a_missing_but_registered_worktree_prunes(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo, _, path, _ = await worktree_b1(host, make_repo, steps, home)
    shutil.rmtree(path)
    assert await host.remove_worktree(repo_root=repo, path=path, sink=steps) is True
    assert str(path) not in worktree_paths(repo)


async def test_unregistered_directory_is_not_removed(
    host: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    path = home / "worktrees" / "pw" / "stray"
    path.mkdir(parents=True)
    assert await host.remove_worktree(repo_root=repo, path=path, sink=steps) is False
    assert path.is_dir()


async def test_main_checkout_is_never_removed(
    host: HostGit, make_repo, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    with pytest.raises(HostOperationError, match="Refusing to remove path"):
        await host.remove_worktree(repo_root=repo, path=repo, sink=steps)
    assert (repo / ".git").is_dir()
    assert steps.steps == []
