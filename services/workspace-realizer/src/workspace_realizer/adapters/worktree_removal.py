"""Removing a worktree, verified: its directory gone and its registration too (DECISIONS 4). The
caller holds the repository lock."""

from __future__ import annotations

from pathlib import Path

from contracts.errors import ErrorCode
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import HostOperationError, StepSink
from workspace_realizer.adapters.probes import find_worktree, list_worktrees
from workspace_realizer.adapters.safety import removal_refusal
from workspace_realizer.adapters.worktrees import prune_missing

__all__ = ["remove_worktree"]


async def remove_worktree(git: GitRunner, *, repo_root: Path, path: Path, sink: StepSink) -> bool:
    """``git worktree remove --force``, then verify: the directory is gone and unregistered."""
    refusal = removal_refusal(path, [repo_root])
    if refusal is not None:
        raise HostOperationError(
            refusal, code=ErrorCode.STATE_CONFLICT, details={"path": str(path)}
        )
    entries = await list_worktrees(git, repo_root)
    entry = find_worktree(entries, path)
    if entries and entry is entries[0]:
        raise HostOperationError(
            f'Refusing to remove path "{path}" because it is the main checkout of the repository.',
            code=ErrorCode.STATE_CONFLICT,
            details={"path": str(path)},
        )
    if entry is not None and fs.lexists(path):
        await git.run(
            ["worktree", "remove", "--force", "--", str(path)],
            cwd=repo_root,
            phase="worktree_cleanup",
            sink=sink,
            metadata={"repoRoot": str(repo_root), "worktreePath": str(path)},
        )
    elif entry is not None:
        await prune_missing(git, repo_root, path, entries, "worktree_cleanup", sink)
    gone = not fs.lexists(path)
    return gone and find_worktree(await list_worktrees(git, repo_root), path) is None
