"""A worktree as close readiness sees it (reference §5.8): status counts, ahead/behind, delivery.

A missing worktree directory is not an unreadable one: its branch (when it still exists) is
inspected from the repository, so delivery facts stay known. State that cannot be read gives
``readable=False`` with the error (a blocking reason).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from workspace_realizer.adapters import fs
from workspace_realizer.adapters.delivery import delivery_facts, unknown_delivery
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import GitInspection, HostOperationError
from workspace_realizer.adapters.probes import (
    StatusCounts,
    current_branch,
    ref_exists,
    rev_parse,
    same_path,
    status_counts,
    toplevel,
)

__all__ = ["inspect_worktree"]


def _unreadable(exists: bool, branch: str | None, error: str) -> GitInspection:
    return GitInspection(
        exists=exists,
        readable=False,
        branch=branch,
        head_sha=None,
        dirty_count=0,
        untracked_count=0,
        ahead=None,
        behind=None,
        delivery=unknown_delivery(),
        error=error,
    )


async def _ahead_behind(
    git: GitRunner, cwd: Path, head_rev: str, base_ref: str | None
) -> tuple[int | None, int | None]:
    if not base_ref or await rev_parse(git, cwd, base_ref) is None:
        return None, None
    result = await git.run(
        ["rev-list", "--left-right", "--count", f"{base_ref}...{head_rev}"], cwd=cwd
    )
    parts = result.out.split()
    if not result.ok or len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None, None
    behind, ahead = (int(p) for p in parts)
    return ahead, behind


async def _status_or_error(git: GitRunner, path: Path) -> StatusCounts | HostOperationError:
    try:
        return await status_counts(git, path)
    except HostOperationError as exc:
        return exc


async def _inspect_branch_only(
    git: GitRunner, repo_root: Path, branch: str | None, base_ref: str | None
) -> GitInspection:
    """The worktree directory is gone: inspect its branch from the repository."""
    if not fs.is_dir(repo_root) or await toplevel(git, repo_root) is None:
        return _unreadable(False, branch, f"the repository {repo_root} is not readable")
    if not branch or not await ref_exists(git, repo_root, f"refs/heads/{branch}"):
        return GitInspection(
            exists=False,
            readable=True,
            branch=branch,
            head_sha=None,
            dirty_count=0,
            untracked_count=0,
            ahead=None,
            behind=None,
            delivery=unknown_delivery(),
        )
    rev = f"refs/heads/{branch}"
    ahead, behind = await _ahead_behind(git, repo_root, rev, base_ref)
    delivery = await delivery_facts(git, repo_root, rev, base_ref)
    return GitInspection(
        exists=False,
        readable=True,
        branch=branch,
        head_sha=delivery.head_sha,
        dirty_count=0,
        untracked_count=0,
        ahead=ahead,
        behind=behind,
        delivery=delivery,
    )


async def inspect_worktree(
    git: GitRunner, *, repo_root: Path, path: Path, branch: str | None, base_ref: str | None
) -> GitInspection:
    """Inspect the worktree at ``path`` (the caller holds the repository lock).

    Args:
        git: The runner.
        repo_root: The project checkout (used when the worktree directory is gone).
        path: The worktree.
        branch: The recorded branch (reported when the directory is gone).
        base_ref: The workspace's base ref.

    Returns:
        The inspection. ``branch`` is the branch actually checked out (None when detached).
    """
    try:
        return await _inspect(git, repo_root=repo_root, path=path, branch=branch, base_ref=base_ref)
    except HostOperationError as exc:  # git could not even start (a directory vanished meanwhile)
        return _unreadable(fs.lexists(path), branch, str(exc))


async def _inspect(
    git: GitRunner, *, repo_root: Path, path: Path, branch: str | None, base_ref: str | None
) -> GitInspection:
    if not fs.lexists(path):
        return await _inspect_branch_only(git, repo_root, branch, base_ref)
    if not fs.is_dir(path):
        return _unreadable(True, branch, f"{path} is not a directory")
    top = await toplevel(git, path)
    if top is None or not same_path(top, path):
        return _unreadable(True, branch, f"{path} is not the top of a git checkout")
    # Read-only and independent: run at once (a detail read waited for ten git processes
    # one after another, 33 ms).
    status, actual, head, (ahead, behind), delivery = await asyncio.gather(
        _status_or_error(git, path),
        current_branch(git, path),
        rev_parse(git, path, "HEAD"),
        _ahead_behind(git, path, "HEAD", base_ref),
        delivery_facts(git, path, "HEAD", base_ref),
    )
    if isinstance(status, HostOperationError):
        return _unreadable(True, branch, f"git status failed: {status}")
    counts = status
    return GitInspection(
        exists=True,
        readable=True,
        branch=actual,
        head_sha=head,
        dirty_count=counts.dirty,
        untracked_count=counts.untracked,
        ahead=ahead,
        behind=behind,
        delivery=delivery,
    )
