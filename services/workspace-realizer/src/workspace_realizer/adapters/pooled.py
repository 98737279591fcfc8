"""Handing a pooled worktree to a new workspace (:mod:`workspace_realizer.adapters.worktree_pool`).

Instead of ``git worktree add --no-track -b <branch> <path> <base>``: ``git worktree move`` of an
entry at the base's commit to ``<path>`` (a rename: the files are already written), the branch
created at that commit only if it does not exist (``update-ref`` with an empty old value), and the
entry's HEAD pointed at it. The result is the worktree a cold add makes: on a new branch without
upstream, at the base the caller resolved, its index matching. The caller holds the repository
lock, and falls back to the cold add when this returns False.
"""

from __future__ import annotations

from pathlib import Path

from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import BaseRef, StepSink
from workspace_realizer.adapters.probes import ref_exists
from workspace_realizer.adapters.worktree_pool import PoolKey, WorktreePool

__all__ = ["hand_out", "pool_key"]


def pool_key(repo_root: Path, path: Path, branch: str, base: BaseRef) -> PoolKey:
    """The pool a worktree of ``branch`` at ``path`` (``<parent>/<branch>``) from ``base`` would
    come from: one per worktree parent, however many folders the branch's name makes."""
    parent = path
    for _ in branch.split("/"):
        parent = parent.parent
    return PoolKey(repo_root=repo_root, parent=parent, base_ref=base.ref)


async def hand_out(
    git: GitRunner,
    pool: WorktreePool,
    where: tuple[Path, Path, str],
    base: BaseRef,
    sink: StepSink,
    metadata: dict[str, object],
) -> bool:
    """Make ``path`` a worktree on the new ``branch`` at ``base.sha`` from a pooled entry
    (``where``: the repository's root, ``path``, ``branch``).

    Returns:
        True when it did; False (nothing changed but a discarded entry) when the pool has no
        entry at ``base.sha``, ``branch`` exists, or git refused the move or the branch.
    """
    repo_root, path, branch = where
    if base.sha is None:
        return False
    key = pool_key(repo_root, path, branch, base)
    entry = pool.take(key, base.sha)
    if entry is None:
        return False
    if await ref_exists(git, repo_root, f"refs/heads/{branch}"):
        pool.discard(key, entry)  # attaching an existing branch checks out its own tree
        return False
    path.parent.mkdir(parents=True, exist_ok=True)  # a branch with "/" nests folders
    moved = await git.run(
        ["worktree", "move", "--", str(entry.path), str(path)],
        cwd=repo_root,
        phase="worktree_prepare",
        sink=sink,
        metadata=metadata | {"created": True, "reusedExistingBranch": False, "pooled": True},
    )
    if not moved.ok:
        pool.discard(key, entry)
        return False
    created = await git.run(
        [
            "update-ref",
            "--create-reflog",
            "-m",
            f"branch: Created from {base.sha}",
            f"refs/heads/{branch}",
            base.sha,
            "",
        ],
        cwd=repo_root,
        phase="worktree_prepare",
        sink=sink,
    )
    remove = ["worktree", "remove", "--force", "--force", "--", str(path)]
    if not created.ok:  # the branch appeared meanwhile (not ours): the worktree goes back
        await git.run(remove, cwd=repo_root, phase="worktree_prepare", sink=sink)
        return False
    switched = await git.run(
        ["symbolic-ref", "HEAD", f"refs/heads/{branch}"],
        cwd=path,
        phase="worktree_prepare",
        sink=sink,
    )
    if not switched.ok:  # undone: the branch (still at the base) and the worktree
        undo = ["update-ref", "-d", f"refs/heads/{branch}", base.sha]
        await git.run(undo, cwd=repo_root, phase="worktree_prepare", sink=sink)
        await git.run(remove, cwd=repo_root, phase="worktree_prepare", sink=sink)
        return False
    return True
