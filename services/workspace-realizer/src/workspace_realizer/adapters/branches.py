"""Branch deletion by compare-and-delete (DECISIONS 3; reference case 59 as changed).

``git update-ref -d refs/heads/<branch> <expected_sha>`` deletes only when the branch still points
at the commit that was checked; it is never run while a worktree has the branch checked out (git
would delete it anyway). A branch that is kept is reported with the reason, never an error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import Step, StepSink
from workspace_realizer.adapters.probes import branch_checked_out_in, list_worktrees, ref_exists

__all__ = ["delete_branch"]


async def _skipped(sink: StepSink, repo_root: Path, command: str, reason: str) -> None:
    now = datetime.now(UTC)
    await sink(
        Step(
            phase="worktree_cleanup",
            command=command,
            cwd=str(repo_root),
            status="skipped",
            exit_code=None,
            stderr=reason.encode(),
            started_at=now,
            finished_at=now,
            metadata={"reason": reason},
        )
    )


async def delete_branch(
    git: GitRunner, *, repo_root: Path, branch: str, expected_sha: str, sink: StepSink
) -> bool:
    """Delete ``refs/heads/<branch>`` only if it still points at ``expected_sha`` and no worktree
    has it checked out (the caller holds the repository lock).

    Returns:
        True when the branch is gone; False when it was kept (the step says why).
    """
    ref = f"refs/heads/{branch}"
    command = f"git update-ref -d {ref} {expected_sha}"
    holder = branch_checked_out_in(await list_worktrees(git, repo_root), branch)
    if holder is not None:
        await _skipped(
            sink,
            repo_root,
            command,
            f'Skipped deleting branch "{branch}": it is checked out at "{holder.path}".',
        )
        return False
    if not await ref_exists(git, repo_root, ref):
        await _skipped(sink, repo_root, command, f'Branch "{branch}" does not exist.')
        return True
    result = await git.run(
        ["update-ref", "-m", "clipyard: delete delivered branch", "-d", ref, expected_sha],
        cwd=repo_root,
        phase="worktree_cleanup",
        sink=sink,
        metadata={"branchName": branch, "expectedSha": expected_sha},
    )
    return result.ok and not await ref_exists(git, repo_root, ref)
