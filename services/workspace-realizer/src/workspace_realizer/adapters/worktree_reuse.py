"""An existing worktree reused (reference §5.4): refreshed when provably unstarted, a warning when
it is behind its base. The caller holds the repository lock."""

from __future__ import annotations

from pathlib import Path

from workspace_realizer.adapters.baseref import remote_tracking
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import BaseRef, StepSink
from workspace_realizer.adapters.probes import remotes, rev_parse, status_counts

__all__ = ["drift_warning", "refresh_unstarted"]


async def refresh_unstarted(
    git: GitRunner, repo_root: Path, path: Path, base: BaseRef, sink: StepSink
) -> bool:
    """Hard-reset a provably unstarted worktree to a newer remote-tracking base (reference §5.4)."""
    if base.sha is None or remote_tracking(base.ref, await remotes(git, repo_root)) is None:
        return False
    head = await rev_parse(git, path, "HEAD")
    if head is None or head == base.sha:
        return False
    count = await git.run(["rev-list", "--count", f"{base.sha}..HEAD"], cwd=path)
    if not count.ok or count.out != "0" or not (await status_counts(git, path)).clean:
        return False
    await git.run(
        ["reset", "--hard", "--quiet", base.sha],
        cwd=path,
        phase="worktree_prepare",
        sink=sink,
        check=True,
        metadata={
            "worktreePath": str(path),
            "baseRef": base.ref,
            "baseRefSha": base.sha,
            "refreshedUnstartedWorktree": True,
        },
    )
    return True


async def drift_warning(git: GitRunner, path: Path, branch: str, base: BaseRef) -> str | None:
    if base.sha is None:
        return f"Could not inspect base drift: base ref {base.ref} does not resolve."
    merge_base = await git.run(["merge-base", "HEAD", base.sha], cwd=path)
    if not merge_base.ok or merge_base.out == base.sha:
        return None
    behind = await git.run(["rev-list", "--count", f"HEAD..{base.sha}"], cwd=path)
    return (
        f'Execution workspace branch "{branch}" is behind {base.ref} by {behind.out or "?"} '
        f"commits: merge-base {merge_base.out[:12]}, current base {base.sha[:12]}. Refresh or "
        "rebase the workspace before relying on recent base-branch fixes."
    )
