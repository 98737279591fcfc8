"""The pre-warmed worktree pool: a new workspace's worktree comes from it at the base the caller
resolved, the same as a cold one; it refills, follows the base, never hands out a stale entry,
stays out of the workspaces' way and is removed on stop and after a crash."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
from realizer_git_helpers import StepRecorder, commit, git

from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import BaseRef
from workspace_realizer.adapters.worktree_pool import POOL_DIR, PoolKey, WorktreePool

pytestmark = pytest.mark.integration


@pytest.fixture
def pooled(home: Path) -> HostGit:
    return HostGit(home=home, pool_size=2, pool_refresh=0.2)


def the_pool(host: HostGit) -> WorktreePool:
    assert host.pool is not None
    return host.pool


async def ready(pool: WorktreePool, key: PoolKey, count: int) -> None:
    """Wait until ``key``'s pool holds ``count`` ready entries."""
    for _ in range(200):
        if len(pool.entries(key)) == count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the pool holds {pool.entries(key)}, not {count} entries")


class Warm(NamedTuple):
    """A project workspace's pool, warmed by its first worktree (``b1``, made cold)."""

    parent: Path
    pool: WorktreePool
    key: PoolKey
    base: BaseRef


async def warmed(host: HostGit, repo: Path, home: Path, steps: StepRecorder) -> Warm:
    parent = home / "worktrees" / "pw"
    pool = the_pool(host)
    key = PoolKey(repo_root=repo, parent=parent, base_ref="main")
    base = await base_of(host, repo, steps)
    await host.ensure_worktree(
        repo_root=repo, path=parent / "b1", branch="b1", base=base, sink=steps
    )
    await ready(pool, key, host.pool.size if host.pool else 0)
    return Warm(parent, pool, key, base)


async def until(done: Callable[[], bool], what: str) -> None:
    for _ in range(200):
        if done():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(what)


def registered(repo: Path) -> list[str]:
    out = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


async def base_of(host: HostGit, repo: Path, steps: StepRecorder) -> BaseRef:
    return await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)


async def test_a_new_workspace_gets_a_pooled_worktree_like_a_cold_one(
    pooled: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app", {"README.md": "hello\n", "src/a.py": "x = 1\n"})
    parent = home / "worktrees" / "pw"
    pool = the_pool(pooled)
    base = await base_of(pooled, repo, steps)
    key = PoolKey(repo_root=repo, parent=parent, base_ref="main")
    # The first workspace is cold; it warms the pool for the next ones.
    first = await pooled.ensure_worktree(
        repo_root=repo, path=parent / "b1", branch="b1", base=base, sink=steps
    )
    await ready(pool, key, 2)
    steps.steps.clear()
    second = await pooled.ensure_worktree(
        repo_root=repo, path=parent / "b2", branch="b2", base=base, sink=steps
    )
    commands = [s.command for s in steps.steps]
    assert any("worktree move" in c for c in commands), commands
    assert not any("worktree add" in c for c in commands), commands
    # The same worktree a cold add makes: its branch, new, at the base, no upstream, clean.
    for outcome in (first, second):
        assert outcome.created
        assert not outcome.reused_existing_branch
        assert outcome.head_sha == base.sha
    path = parent / "b2"
    assert git(path, "symbolic-ref", "--short", "HEAD") == "b2"
    assert git(repo, "rev-parse", "refs/heads/b2") == base.sha
    assert git(path, "status", "--porcelain") == ""
    assert (path / "src" / "a.py").read_text() == "x = 1\n"
    assert git(repo, "config", "--get-regexp", "^branch\\.b2\\.", check=False) == ""
    assert "branch: Created from" in git(repo, "reflog", "show", "b2")
    # The pool refills, and its entries are detached: no branch is held, none is a workspace.
    await ready(pool, key, 2)
    pooled_paths = [p for p in registered(repo) if Path(p).parent.name == POOL_DIR]
    assert len(pooled_paths) == 2
    assert sorted(p.name for p in parent.iterdir()) == [POOL_DIR, "b1", "b2"]
    await pool.close()
    assert [p for p in registered(repo) if POOL_DIR in p] == []
    assert not (parent / POOL_DIR).exists()


async def test_a_base_that_moved_is_never_handed_out_stale(
    make_repo, steps: StepRecorder, home: Path
) -> None:
    pooled = HostGit(home=home, pool_size=2, pool_refresh=0)  # no refresh: only realizes
    repo = make_repo("app")
    parent, pool, key, old = await warmed(pooled, repo, home, steps)
    moved = commit(repo, {"later.txt": "later\n"})
    new = await base_of(pooled, repo, steps)
    assert new.sha == moved != old.sha
    steps.steps.clear()
    # The pool's entries are at the old commit: this one is made cold, at the new base.
    outcome = await pooled.ensure_worktree(
        repo_root=repo, path=parent / "b2", branch="b2", base=new, sink=steps
    )
    assert outcome.head_sha == new.sha
    assert (parent / "b2" / "later.txt").exists()
    assert any("worktree add" in s.command for s in steps.steps)
    # Then every entry follows the base: the old ones are gone.
    await until(
        lambda: [e.sha for e in pool.entries(key)] == [new.sha] * 2, "the pool followed the base"
    )
    heads = {git(e.path, "rev-parse", "HEAD") for e in pool.entries(key)}
    assert heads == {new.sha}
    await pool.close()


async def test_the_refresh_follows_a_base_that_moved_with_no_realize(
    pooled: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    parent, pool, key, _ = await warmed(pooled, repo, home, steps)
    moved = commit(repo, {"later.txt": "later\n"})
    await until(
        lambda: [e.sha for e in pool.entries(key)] == [moved] * 2, "the refresh followed the base"
    )
    steps.steps.clear()
    await pooled.ensure_worktree(
        repo_root=repo,
        path=parent / "b2",
        branch="b2",
        base=await base_of(pooled, repo, steps),
        sink=steps,
    )
    assert any("worktree move" in s.command for s in steps.steps)
    assert (parent / "b2" / "later.txt").exists()
    await pool.close()


async def test_an_existing_branch_is_attached_cold_and_the_entry_is_not_lost_in_git(
    pooled: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    parent, pool, key, base = await warmed(pooled, repo, home, steps)
    git(repo, "branch", "feature", "main")
    outcome = await pooled.ensure_worktree(
        repo_root=repo, path=parent / "feature", branch="feature", base=base, sink=steps
    )
    assert outcome.reused_existing_branch
    await ready(pool, key, 2)
    assert len([p for p in registered(repo) if Path(p).parent.name == POOL_DIR]) == 2
    await pool.close()


async def test_entries_a_dead_process_left_are_removed_by_the_next(
    home: Path, make_repo, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    parent = home / "worktrees" / "pw"
    dead = HostGit(home=home, pool_size=2, pool_refresh=0)
    key = PoolKey(repo_root=repo, parent=parent, base_ref="main")
    base = await base_of(dead, repo, steps)
    await dead.ensure_worktree(
        repo_root=repo, path=parent / "b1", branch="b1", base=base, sink=steps
    )
    await ready(the_pool(dead), key, 2)
    # It dies here (no close). The next process cleans up before it serves.
    after = HostGit(home=home, pool_size=2, pool_refresh=0)
    assert await the_pool(after).clean_leftovers() == 2
    assert registered(repo) == [str(repo), str(parent / "b1")]
    assert not (parent / POOL_DIR).exists()
    assert (parent / "b1" / "README.md").exists()


async def test_no_entry_is_made_where_the_disk_is_tight(
    home: Path, make_repo, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    parent = home / "worktrees" / "pw"
    tight = HostGit(home=home, pool_size=2, pool_refresh=0, pool_min_free_bytes=2**62)
    base = await base_of(tight, repo, steps)
    await tight.ensure_worktree(
        repo_root=repo, path=parent / "b1", branch="b1", base=base, sink=steps
    )
    await asyncio.sleep(0.3)
    assert the_pool(tight).entries(PoolKey(repo_root=repo, parent=parent, base_ref="main")) == []
    assert not (parent / POOL_DIR).exists()


async def test_a_branch_with_slashes_comes_from_its_parents_one_pool(
    pooled: HostGit, make_repo, steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    parent, pool, key, base = await warmed(pooled, repo, home, steps)
    steps.steps.clear()
    await pooled.ensure_worktree(
        repo_root=repo, path=parent / "team" / "b2", branch="team/b2", base=base, sink=steps
    )
    assert any("worktree move" in s.command for s in steps.steps)
    assert git(parent / "team" / "b2", "symbolic-ref", "--short", "HEAD") == "team/b2"
    await ready(pool, key, 2)
    assert pool.keys() == [key]
    assert not (parent / "team" / POOL_DIR).exists()
    await pool.close()


async def test_what_a_dead_process_left_is_removed_even_locked_or_without_its_repository(
    home: Path, make_repo, steps: StepRecorder
) -> None:
    kept, gone = make_repo("kept"), make_repo("gone")
    dead = HostGit(home=home, pool_size=1, pool_refresh=0)
    for repo, name in ((kept, "a"), (gone, "b")):
        base = await base_of(dead, repo, steps)
        path = home / "worktrees" / name / "b1"
        await dead.ensure_worktree(repo_root=repo, path=path, branch="b1", base=base, sink=steps)
        await ready(the_pool(dead), PoolKey(repo_root=repo, parent=path.parent, base_ref="main"), 1)
    # An add cut short leaves its registration locked ("initializing"); the other repository is
    # deleted altogether (a drain took its checkout).
    (entry,) = the_pool(dead).entries(PoolKey(kept, home / "worktrees" / "a", "main"))
    git(kept, "worktree", "lock", "--reason", "initializing", str(entry.path))
    shutil.rmtree(gone)
    # The next process, with the pool off, still removes it all.
    after = HostGit(home=home)
    assert after.pool is None
    cleaner = WorktreePool(after.git, home=home, size=0, refresh=0, min_free_bytes=0)
    assert await cleaner.clean_leftovers() == 2
    assert [p for p in registered(kept) if POOL_DIR in p] == []
    assert not (home / "worktrees" / "a" / POOL_DIR).exists()
    assert not (home / "worktrees" / "b" / POOL_DIR).exists()
