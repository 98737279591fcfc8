"""Reopen (DECISIONS 12): rebuild the worktree on its branch, then bring the newest rescue commit's
changes back as uncommitted and untracked files.

The branch is attached when it still exists; otherwise it is recreated at the rescued HEAD (or at
the base when there is no rescue). The rescue's tree is then laid over the fresh checkout with a
two-tree ``read-tree -m -u HEAD <rescue>`` and the index is reset to HEAD, so tracked changes show
as unstaged modifications and files that were untracked are untracked again.
"""

from __future__ import annotations

from pathlib import Path

from contracts.errors import ErrorCode
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import (
    BaseRef,
    HostOperationError,
    RescueRef,
    StepSink,
    WorktreeOutcome,
)
from workspace_realizer.adapters.probes import (
    branch_checked_out_in,
    list_worktrees,
    rev_parse,
    status_counts,
)
from workspace_realizer.adapters.rescue import rescued_head
from workspace_realizer.adapters.worktrees import (
    add_worktree,
    check_branch_name,
    prune_missing,
    validate_existing,
)

__all__ = ["restore_worktree"]


async def _apply(
    git: GitRunner, path: Path, rescue_sha: str, parent: str | None, ref: str, sink: StepSink
) -> str | None:
    """Lay the rescue's changes over the worktree; return a warning when they cannot be."""
    head = await rev_parse(git, path, "HEAD")
    if head != parent:
        return (
            f"The branch moved since the rescue ({ref}); its changes were not applied and stay "
            "under that ref."
        )
    if not (await status_counts(git, path)).clean:
        return f"The worktree already has changes; the rescue {ref} was not applied."
    meta = {"worktreePath": str(path), "rescueRef": ref, "rescueSha": rescue_sha}
    await git.run(
        ["read-tree", "-m", "-u", "HEAD", rescue_sha],
        cwd=path,
        phase="workspace_restore",
        sink=sink,
        check=True,
        metadata=meta,
    )
    await git.run(
        ["reset", "--quiet", "--mixed", "HEAD", "--"],
        cwd=path,
        phase="workspace_restore",
        sink=sink,
        check=True,
        metadata=meta,
    )
    return None


async def restore_worktree(
    git: GitRunner,
    *,
    repo_root: Path,
    path: Path,
    branch: str,
    base: BaseRef,
    rescue: RescueRef | None,
    sink: StepSink,
) -> WorktreeOutcome:
    """Rebuild the worktree at ``path`` on ``branch`` and restore ``rescue`` (the caller holds the
    repository lock).

    Raises:
        HostOperationError: The path exists but is not this branch's worktree, the branch is
            checked out elsewhere, or git failed.
    """
    await check_branch_name(git, repo_root, branch)
    warnings: list[str] = []
    rescue_sha: str | None = None
    rescued: str | None = None
    is_rescue_commit = False
    start: str | None = base.sha or base.ref
    if rescue is not None:
        rescue_sha = await rev_parse(git, repo_root, rescue.sha) or await rev_parse(
            git, repo_root, rescue.ref
        )
        if rescue_sha is None:
            warnings.append(f"The rescue {rescue.ref} no longer resolves; nothing was restored.")
        else:
            is_rescue_commit, rescued = await rescued_head(git, repo_root, rescue_sha)
            start = rescued or start
    entries = await list_worktrees(git, repo_root)
    created = attached = False
    if fs.lexists(path):
        await validate_existing(git, entries, path, branch)
    else:
        entries = await prune_missing(git, repo_root, path, entries, "workspace_restore", sink)
        holder = branch_checked_out_in(entries, branch)
        if holder is not None:
            raise HostOperationError(
                f'Cannot restore "{path}": branch "{branch}" is checked out at "{holder.path}"',
                code=ErrorCode.WORKSPACE_VALIDATION_FAILED,
                details={"reason": "git_worktree_not_reusable", "registeredPath": holder.path},
            )
        attached = await add_worktree(
            git,
            repo_root=repo_root,
            path=path,
            branch=branch,
            start=start,
            phase="workspace_restore",
            sink=sink,
            metadata={
                "repoRoot": str(repo_root),
                "worktreePath": str(path),
                "branchName": branch,
                "restored": True,
                "rescueRef": rescue.ref if rescue else None,
            },
        )
        created = True
        if not attached:
            warnings.append(f'Branch "{branch}" was gone; it was recreated at {start}.')
    if rescue is not None and rescue_sha is not None and is_rescue_commit:
        warning = await _apply(git, path, rescue_sha, rescued, rescue.ref, sink)
        if warning:
            warnings.append(warning)
    head = await rev_parse(git, path, "HEAD")
    return WorktreeOutcome(
        path=path,
        branch=branch,
        head_sha=head or "",
        created=created,
        reused_existing_branch=attached,
        warnings=tuple(warnings),
    )
