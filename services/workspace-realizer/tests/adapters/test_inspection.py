"""Inspection and delivery facts (reference §3.4, §5.8; case 60's git parts; DECISIONS 2)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder, commit, git

from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import WorktreeOutcome

pytestmark = pytest.mark.integration


async def worktree(host: HostGit, repo: Path, home: Path, branch: str) -> WorktreeOutcome:
    steps = StepRecorder()
    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
    return await host.ensure_worktree(
        repo_root=repo, path=home / "wt" / branch, branch=branch, base=base, sink=steps
    )


def squash_merge(repo: Path, branch: str) -> str:
    """Squash-merge ``branch`` into ``main`` (as a forge's "squash and merge" does)."""
    git(repo, "merge", "--squash", "-q", branch)
    git(repo, "commit", "-q", "-m", f"Squashed {branch}")
    return git(repo, "rev-parse", "HEAD")


async def test_counts_and_ahead_behind(host: HostGit, make_repo, home: Path) -> None:
    repo = make_repo("app", {"a.txt": "a\n", "b.txt": "b\n", ".gitignore": "*.log\n"})
    wt = await worktree(host, repo, home, "b1")
    commit(wt.path, {"c.txt": "c\n"})
    commit(repo, {"main-only.txt": "m\n"})
    (wt.path / "a.txt").write_text("changed\n")
    (wt.path / "b.txt").unlink()
    (wt.path / "new1.txt").write_text("n\n")
    (wt.path / "dir").mkdir()
    (wt.path / "dir" / "new2.txt").write_text("n\n")
    (wt.path / "ignored.log").write_text("ignored\n")

    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main")

    assert seen.exists is True
    assert seen.readable is True
    assert seen.branch == "b1"
    assert seen.dirty_count == 2
    assert seen.untracked_count == 2
    assert seen.ahead == 1
    assert seen.behind == 1
    assert seen.head_sha == git(wt.path, "rev-parse", "HEAD")
    assert seen.delivery.commits_ahead == 1
    assert seen.delivery.merged_by_ancestry is False
    assert seen.delivery.merged_by_squash is False


async def test_rename_counts_once(host: HostGit, make_repo, home: Path) -> None:
    repo = make_repo("app", {"a.txt": "a\n" * 20})
    wt = await worktree(host, repo, home, "b1")
    git(wt.path, "mv", "a.txt", "renamed.txt")
    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main")
    assert (seen.dirty_count, seen.untracked_count) == (1, 0)


async def test_case60_no_commits_is_ancestry_with_zero_ahead(
    host: HostGit, make_repo, home: Path
) -> None:
    repo = make_repo("app")
    wt = await worktree(host, repo, home, "b1")
    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main")
    assert seen.delivery.merged_by_ancestry is True
    assert seen.delivery.merged_by_squash is False
    assert seen.delivery.commits_ahead == 0


async def test_case60_merged_by_ancestry(host: HostGit, make_repo, home: Path) -> None:
    repo = make_repo("app")
    wt = await worktree(host, repo, home, "b1")
    commit(wt.path, {"feature.txt": "f\n"})
    git(repo, "merge", "-q", "--no-ff", "-m", "merge b1", "b1")
    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main")
    assert seen.delivery.merged_by_ancestry is True
    assert seen.delivery.commits_ahead == 0


async def test_case60_squash_of_two_commits_into_a_base_that_moved_on(
    host: HostGit, make_repo, home: Path
) -> None:
    repo = make_repo("app", {"app.py": "v = 1\n", "other.py": "o = 1\n"})
    wt = await worktree(host, repo, home, "b1")
    commit(wt.path, {"feature.py": "f = 1\n"}, "first")
    commit(wt.path, {"feature.py": "f = 2\n", "app.py": "v = 2\n"}, "second")
    commit(repo, {"other.py": "o = 2\n"}, "base moves on")
    squash_merge(repo, "b1")
    commit(repo, {"later.py": "l = 1\n"}, "base moves on again")

    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main")

    assert seen.delivery.merged_by_ancestry is False
    assert seen.delivery.merged_by_squash is True
    assert seen.delivery.commits_ahead == 2


async def test_case60_squash_found_by_patch_id_when_base_rewrote_the_lines(
    host: HostGit, make_repo, home: Path
) -> None:
    """merge-tree no longer yields the base's tree (the base changed the same lines after the
    squash); the combined diff's patch id still matches the squash commit."""
    repo = make_repo("app", {"app.py": "v = 1\n"})
    wt = await worktree(host, repo, home, "b1")
    commit(wt.path, {"app.py": "v = 2\n"}, "first")
    commit(wt.path, {"app.py": "v = 3\n"}, "second")
    squash_merge(repo, "b1")
    commit(repo, {"app.py": "v = 4\n"}, "base rewrites the line")
    merged_tree = git(repo, "merge-tree", "--write-tree", "main", "b1", check=False)
    assert merged_tree.splitlines()[0] != git(repo, "rev-parse", "main^{tree}")

    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main")

    assert seen.delivery.merged_by_squash is True
    assert seen.delivery.commits_ahead == 2


async def test_case60_unmerged(host: HostGit, make_repo, home: Path) -> None:
    repo = make_repo("app", {"app.py": "v = 1\n"})
    wt = await worktree(host, repo, home, "b1")
    commit(wt.path, {"feature.py": "f = 1\n"})
    commit(repo, {"app.py": "v = 2\n"})
    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main")
    assert seen.delivery.merged_by_ancestry is False
    assert seen.delivery.merged_by_squash is False
    assert seen.delivery.commits_ahead == 1


async def test_unknown_base_gives_unknown_delivery(host: HostGit, make_repo, home: Path) -> None:
    repo = make_repo("app")
    wt = await worktree(host, repo, home, "b1")
    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="gone")
    assert seen.readable is True
    assert seen.delivery.merged_by_ancestry is None
    assert seen.delivery.merged_by_squash is None
    assert seen.ahead is None
    assert seen.behind is None


async def test_unreadable_directory(host: HostGit, make_repo, home: Path) -> None:
    repo = make_repo("app")
    plain = home / "not-a-checkout"
    plain.mkdir()
    seen = await host.inspect(repo_root=repo, path=plain, branch="b1", base_ref="main")
    assert seen.exists is True
    assert seen.readable is False
    assert seen.error is not None
    assert "not the top of a git checkout" in seen.error


async def test_broken_worktree_is_unreadable(host: HostGit, make_repo, home: Path) -> None:
    repo = make_repo("app")
    wt = await worktree(host, repo, home, "b1")
    (wt.path / ".git").write_text("gitdir: /nowhere/at/all\n")
    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main")
    assert seen.readable is False


async def test_missing_directory_inspects_the_branch(host: HostGit, make_repo, home: Path) -> None:
    repo = make_repo("app")
    wt = await worktree(host, repo, home, "b1")
    tip = commit(wt.path, {"x.txt": "x\n"})
    shutil.rmtree(wt.path)
    seen = await host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main")
    assert seen.exists is False
    assert seen.readable is True
    assert seen.head_sha == tip
    assert seen.ahead == 1
    assert seen.delivery.commits_ahead == 1
    assert seen.delivery.merged_by_ancestry is False


async def test_inspection_does_not_wait_behind_other_git_work(
    host: HostGit, make_repo, home: Path
) -> None:
    # A detail read must not wait for a long fetch or clone holding the repository's lock,
    # and must leave no index.lock behind for the git work it runs beside.
    repo = make_repo("app", {"a.txt": "a\n"})
    wt = await worktree(host, repo, home, "b1")
    (wt.path / "a.txt").write_text("changed\n")
    lock = await host.git.repo_lock(repo)
    async with lock:
        seen = await asyncio.wait_for(
            host.inspect(repo_root=repo, path=wt.path, branch="b1", base_ref="main"), 10
        )
    assert (seen.readable, seen.dirty_count) == (True, 1)
    common = Path(git(wt.path, "rev-parse", "--git-dir"))
    assert not (common / "index.lock").exists()
