"""Worktrees: reuse, attach, create (reference §5.3, §5.4; DECISIONS 5, 6); removal is in
:mod:`workspace_realizer.adapters.worktree_removal`. The caller holds the repository lock."""

from __future__ import annotations

from pathlib import Path

from contracts.errors import ErrorCode
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.pooled import hand_out, pool_key
from workspace_realizer.adapters.ports import (
    BaseRef,
    HostOperationError,
    Phase,
    StepSink,
    WorktreeOutcome,
)
from workspace_realizer.adapters.probes import (
    WorktreeEntry,
    branch_checked_out_in,
    current_branch,
    find_worktree,
    list_worktrees,
    ref_exists,
    rev_parse,
    same_path,
    toplevel,
)
from workspace_realizer.adapters.safety import check_no_company_ancestor
from workspace_realizer.adapters.worktree_pool import WorktreePool
from workspace_realizer.adapters.worktree_reuse import drift_warning, refresh_unstarted

__all__ = [
    "add_worktree",
    "check_branch_name",
    "check_no_company_ancestor",
    "ensure_worktree",
    "not_reusable",
    "prune_missing",
    "validate_existing",
]


def not_reusable(path: Path, reason: str, **details: object) -> HostOperationError:
    """The error for a worktree path that exists but cannot be reused (reference case 47)."""
    return HostOperationError(
        f'Configured worktree path "{path}" already exists and is not a reusable git worktree '
        f"({reason})",
        code=ErrorCode.WORKSPACE_VALIDATION_FAILED,
        details={"reason": "git_worktree_not_reusable", "path": str(path), "detail": reason}
        | details,
    )


async def check_branch_name(git: GitRunner, repo_root: Path, branch: str) -> None:
    """Refuse a name git would not accept as a branch."""
    result = await git.run(["check-ref-format", "--branch", branch], cwd=repo_root)
    if not result.ok or branch.startswith("-"):
        raise HostOperationError(
            f'"{branch}" is not a valid git branch name', code=ErrorCode.VALIDATION_FAILED
        )


async def validate_existing(
    git: GitRunner, entries: list[WorktreeEntry], path: Path, branch: str
) -> None:
    """Check that an existing path is a registered worktree of this repository on ``branch``.

    Raises:
        HostOperationError: ``workspace_validation_failed`` naming the reason.
    """
    if not fs.is_dir(path):
        raise not_reusable(path, "path is not a directory")
    if find_worktree(entries, path) is None:
        raise not_reusable(path, "path is not registered in `git worktree list`")
    top = await toplevel(git, path)
    if top is None or not same_path(top, path):
        raise not_reusable(path, "path is not the top of a git checkout")
    actual = await current_branch(git, path)
    if actual != branch:
        expected_sha = await rev_parse(git, path, f"refs/heads/{branch}")
        actual_sha = await rev_parse(git, path, "HEAD")
        raise HostOperationError(
            f'Worktree "{path}" has {actual or "a detached HEAD"} checked out, not the recorded '
            f'branch "{branch}"',
            code=ErrorCode.WORKSPACE_VALIDATION_FAILED,
            details={
                "reason": "git_worktree_branch_incoherence",
                "path": str(path),
                "expectedBranch": branch,
                "actualBranch": actual,
                "expectedHeadSha": expected_sha,
                "actualHeadSha": actual_sha,
                "ancestry": await _ancestry(git, path, expected_sha, actual_sha),
                # Clipyard repairs nothing by itself; the board's reconcile-branch is the repair.
                "safeRepair": {"eligible": False, "attempted": False, "succeeded": False},
            },
        )


async def _ancestry(git: GitRunner, path: Path, expected: str | None, actual: str | None) -> str:
    """``ancestor`` when the recorded branch's tip is an ancestor of HEAD, ``diverged`` when not,
    ``unknown`` when either is missing or git cannot tell (reference §5.6 evidence)."""
    if not expected or not actual:
        return "unknown"
    check = await git.run(["merge-base", "--is-ancestor", expected, actual], cwd=path)
    if check.returncode == 0:
        return "ancestor"
    return "diverged" if check.returncode == 1 else "unknown"


async def prune_missing(
    git: GitRunner,
    repo_root: Path,
    path: Path,
    entries: list[WorktreeEntry],
    phase: Phase,
    sink: StepSink,
) -> list[WorktreeEntry]:
    """Drop a registration whose directory is gone (``git worktree prune``; unlock first if locked)."""
    entry = find_worktree(entries, path)
    if entry is None or fs.lexists(path):
        return entries
    if entry.locked:
        await git.run(["worktree", "unlock", str(path)], cwd=repo_root, phase=phase, sink=sink)
    await git.run(
        ["worktree", "prune"],
        cwd=repo_root,
        phase=phase,
        sink=sink,
        check=True,
        metadata={"repoRoot": str(repo_root), "worktreePath": str(path), "pruned": True},
    )
    return await list_worktrees(git, repo_root)


async def add_worktree(
    git: GitRunner,
    *,
    repo_root: Path,
    path: Path,
    branch: str,
    start: str | None,
    phase: Phase,
    sink: StepSink,
    metadata: dict[str, object],
    exists: bool | None = None,
) -> bool:
    """Attach ``branch`` when it exists (``exists``, when the caller knows), else create it at
    ``start`` with ``--no-track``.

    Returns:
        True when an existing branch was attached.
    """
    check_no_company_ancestor(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if exists is None:
        exists = await ref_exists(git, repo_root, f"refs/heads/{branch}")
    if exists:
        await git.run(
            ["worktree", "add", "--", str(path), branch],
            cwd=repo_root,
            phase=phase,
            sink=sink,
            check=True,
            metadata=metadata | {"created": True, "reusedExistingBranch": True},
        )
        return True
    if start is None:
        raise HostOperationError(
            f'Cannot create branch "{branch}": its base does not resolve to a commit',
            code=ErrorCode.UNPROCESSABLE,
        )
    await git.run(
        ["worktree", "add", "--no-track", "-b", branch, "--", str(path), start],
        cwd=repo_root,
        phase=phase,
        sink=sink,
        check=True,
        metadata=metadata | {"created": True, "reusedExistingBranch": False},
    )
    return False


async def ensure_worktree(
    git: GitRunner,
    *,
    repo_root: Path,
    path: Path,
    branch: str,
    base: BaseRef,
    sink: StepSink,
    pool: WorktreePool | None = None,
) -> WorktreeOutcome:
    """Reuse, attach or create the worktree of ``branch`` at ``path``; a new branch's worktree
    comes from ``pool`` when it holds one at ``base.sha`` (which it then refills)."""
    await check_branch_name(git, repo_root, branch)
    warnings: list[str] = []
    if fs.lexists(path):
        await validate_existing(git, await list_worktrees(git, repo_root), path, branch)
        refreshed = await refresh_unstarted(git, repo_root, path, base, sink)
        drift = await drift_warning(git, path, branch, base)
        if drift:
            warnings.append(drift)
        head = await rev_parse(git, path, "HEAD")
        return WorktreeOutcome(
            path=path,
            branch=branch,
            head_sha=head or "",
            created=False,
            refreshed_unstarted=refreshed,
            warnings=tuple(warnings),
        )
    exists = await ref_exists(git, repo_root, f"refs/heads/{branch}")
    if exists:  # only a branch that exists can be checked out elsewhere
        entries = await list_worktrees(git, repo_root)
        entries = await prune_missing(git, repo_root, path, entries, "worktree_prepare", sink)
        _check_not_held(entries, branch, path)
    metadata: dict[str, object] = {
        "repoRoot": str(repo_root),
        "worktreePath": str(path),
        "branchName": branch,
        "baseRef": base.ref,
        "baseRefSha": base.sha,
    }
    attached = await _new_worktree(
        git, pool, (repo_root, path, branch, exists), base, sink, metadata
    )
    head = base.sha if not attached and base.sha else await rev_parse(git, path, "HEAD")
    return WorktreeOutcome(
        path=path,
        branch=branch,
        head_sha=head or "",
        created=True,
        reused_existing_branch=attached,
        warnings=tuple(warnings),
    )


def _check_not_held(entries: list[WorktreeEntry], branch: str, path: Path) -> None:
    holder = branch_checked_out_in(entries, branch)
    if holder is not None:
        raise HostOperationError(
            f'Registered worktree for branch "{branch}" is not reusable: it is checked out at '
            f'"{holder.path}", not at "{path}"',
            code=ErrorCode.WORKSPACE_VALIDATION_FAILED,
            details={
                "reason": "git_worktree_not_reusable",
                "branch": branch,
                "registeredPath": holder.path,
                "path": str(path),
            },
        )


async def _new_worktree(
    git: GitRunner,
    pool: WorktreePool | None,
    where: tuple[Path, Path, str, bool],
    base: BaseRef,
    sink: StepSink,
    metadata: dict[str, object],
) -> bool:
    """The worktree of a branch at a path (``where``: the repository's root, the path, the
    branch, whether it exists): from ``pool`` when it holds one at ``base.sha``, else added,
    the branch attached when it exists; the pool then refilled. True when attached.

    Nothing listed the worktrees before a new branch's (listing costs 40 ms at 1,000): when
    git refuses the path as still registered (its folder was deleted), the registration is
    pruned and the add made again.
    """
    repo_root, path, branch, exists = where
    if pool is not None and not exists:
        check_no_company_ancestor(path)  # the cold add checks it itself
        pooled = await hand_out(git, pool, (repo_root, path, branch), base, sink, metadata)
    else:
        pooled = False

    async def add() -> bool:
        return await add_worktree(
            git,
            repo_root=repo_root,
            path=path,
            branch=branch,
            start=base.sha or base.ref,
            phase="worktree_prepare",
            sink=sink,
            metadata=metadata,
            exists=exists,
        )

    try:
        attached = not pooled and await add()
    except HostOperationError:
        entries = await list_worktrees(git, repo_root)
        if exists or fs.lexists(path) or find_worktree(entries, path) is None:
            raise
        # git made the branch before it refused the path: undo that, prune, add again.
        start = base.sha or await rev_parse(git, repo_root, base.ref)
        if start is not None:
            undo = ["update-ref", "-d", f"refs/heads/{branch}", start]
            await git.run(undo, cwd=repo_root, phase="worktree_prepare", sink=sink)
        await prune_missing(git, repo_root, path, entries, "worktree_prepare", sink)
        attached = await add()
    if pool is not None and base.sha is not None:
        pool.want(pool_key(repo_root, path, branch, base), base.sha)
    return attached
