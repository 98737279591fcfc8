"""Branch reconcile (reference §4.3, §5.6), kept modest.

* ``forward``: the recorded branch is an ancestor of the live one (or is gone while the live one
  exists) and the tree is clean: nothing changes on disk; the caller moves the record to the live
  branch.
* ``override``: the tree is clean and a branch is checked out: the caller moves the record, no
  ancestry needed.
* ``quarantine_restore``: the live state (HEAD plus every change and untracked file) goes to a
  rescue ref, any interrupted operation is quit, the recorded branch is checked out and the tree is
  cleaned and verified clean.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from contracts.errors import ErrorCode
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import (
    HostOperationError,
    ReconcileOutcome,
    RescueRef,
    StepSink,
)
from workspace_realizer.adapters.probes import (
    current_branch,
    rev_parse,
    same_path,
    status_counts,
    toplevel,
)
from workspace_realizer.adapters.rescue import write_rescue_ref

__all__ = ["reconcile_branch"]

Mode = Literal["forward", "override", "quarantine_restore"]
_IN_PROGRESS = (
    ("rebase-merge", ["rebase", "--quit"]),
    ("rebase-apply", ["rebase", "--quit"]),
    ("MERGE_HEAD", ["merge", "--quit"]),
    ("CHERRY_PICK_HEAD", ["cherry-pick", "--quit"]),
    ("REVERT_HEAD", ["revert", "--quit"]),
)


def _refused(message: str, evidence: dict[str, object]) -> HostOperationError:
    return HostOperationError(message, code=ErrorCode.STATE_CONFLICT, details=evidence)


async def _quit_interrupted(git: GitRunner, path: Path, sink: StepSink) -> None:
    for marker, args in _IN_PROGRESS:
        where = await git.run(
            ["rev-parse", "--path-format=absolute", "--git-path", marker], cwd=path, check=True
        )
        if fs.lexists(where.out):
            await git.run(args, cwd=path, phase="branch_reconcile", sink=sink)


@dataclass(frozen=True, kw_only=True)
class _Live:
    """What the worktree holds now, against the recorded branch: the evidence of a refusal."""

    recorded_branch: str
    live: str | None
    recorded_sha: str | None
    live_sha: str | None
    verdict: Literal["ancestor", "diverged", "unknown"]
    cleanliness: Literal["clean", "dirty", "unknown"]

    def evidence(self) -> dict[str, object]:
        return {
            "recordedBranch": self.recorded_branch,
            "liveBranch": self.live,
            "recordedSha": self.recorded_sha,
            "liveSha": self.live_sha,
            "ancestry": self.verdict,
            "cleanliness": self.cleanliness,
        }


async def _inspect(git: GitRunner, repo_root: Path, path: Path, recorded_branch: str) -> _Live:
    top = await toplevel(git, path) if fs.is_dir(path) else None
    if top is None or not same_path(top, path):
        raise HostOperationError(
            f'"{path}" is not a git worktree',
            code=ErrorCode.WORKSPACE_VALIDATION_FAILED,
            details={"reason": "git_worktree_not_reusable", "path": str(path)},
        )
    live = await current_branch(git, path)
    live_sha = await rev_parse(git, path, "HEAD")
    recorded_sha = await rev_parse(git, repo_root, f"refs/heads/{recorded_branch}")
    try:
        cleanliness: Literal["clean", "dirty", "unknown"] = (
            "clean" if (await status_counts(git, path)).clean else "dirty"
        )
    except HostOperationError:
        cleanliness = "unknown"
    verdict: Literal["ancestor", "diverged", "unknown"] = "unknown"
    if recorded_sha and live_sha:
        check = await git.run(["merge-base", "--is-ancestor", recorded_sha, live_sha], cwd=path)
        if check.returncode == 0:
            verdict = "ancestor"
        elif check.returncode == 1:
            verdict = "diverged"
    return _Live(
        recorded_branch=recorded_branch,
        live=live,
        recorded_sha=recorded_sha,
        live_sha=live_sha,
        verdict=verdict,
        cleanliness=cleanliness,
    )


def _move_record(mode: Mode, now: _Live) -> ReconcileOutcome:
    """``forward`` and ``override``: the record moves to the live branch."""
    evidence = now.evidence()
    if now.cleanliness != "clean" or now.live is None:
        raise _refused(f"{mode} needs a clean tree with a branch checked out", evidence)
    forward_ok = now.verdict == "ancestor" or (
        now.recorded_sha is None and now.live_sha is not None
    )
    if mode == "forward" and not forward_ok:
        raise _refused(
            f'forward needs "{now.recorded_branch}" to be an ancestor of "{now.live}" (or gone)',
            evidence,
        )
    return ReconcileOutcome(
        from_branch=now.recorded_branch,
        to_branch=now.live,
        from_sha=now.recorded_sha,
        to_sha=now.live_sha,
        ancestry_verdict=now.verdict,
        cleanliness=now.cleanliness,
    )


async def _quarantine_restore(
    git: GitRunner,
    repo_root: Path,
    path: Path,
    now: _Live,
    rescue_ref: str | None,
    sink: StepSink,
) -> ReconcileOutcome:
    """Keep the live state in a rescue ref, then put the worktree back on the recorded branch."""
    evidence, recorded_branch, live = now.evidence(), now.recorded_branch, now.live
    if now.recorded_sha is None:
        raise _refused(f'quarantine_restore needs the branch "{recorded_branch}"', evidence)
    rescue: RescueRef | None = None
    if now.cleanliness != "clean" or live != recorded_branch:
        if not rescue_ref:
            raise _refused("quarantine_restore needs a rescue ref name", evidence)
        rescue = await write_rescue_ref(
            git,
            repo_root=repo_root,
            path=path,
            ref=rescue_ref,
            message=f"Clipyard dirty workspace rescue (recorded {recorded_branch}, live {live})",
            sink=sink,
        )
    await _quit_interrupted(git, path, sink)
    for args in (
        ["checkout", "--force", "--quiet", recorded_branch, "--"],
        ["clean", "-fd", "--quiet"],
    ):
        await git.run(
            args,
            cwd=path,
            phase="branch_reconcile",
            sink=sink,
            check=True,
            metadata={"worktreePath": str(path), "mode": "quarantine_restore"},
        )
    if (
        not (await status_counts(git, path)).clean
        or await current_branch(git, path) != recorded_branch
    ):
        raise HostOperationError(
            "quarantine_restore could not leave a clean worktree on the recorded branch",
            code=ErrorCode.STATE_CONFLICT,
            details=evidence,
        )
    return ReconcileOutcome(
        from_branch=live,
        to_branch=recorded_branch,
        from_sha=now.live_sha,
        to_sha=now.recorded_sha,
        ancestry_verdict=now.verdict,
        cleanliness=now.cleanliness,
        rescue=rescue,
    )


async def reconcile_branch(
    git: GitRunner,
    *,
    repo_root: Path,
    path: Path,
    recorded_branch: str,
    mode: Mode,
    rescue_ref: str | None,
    sink: StepSink,
) -> ReconcileOutcome:
    """Inspect the worktree and apply ``mode`` (the caller holds the repository lock).

    Raises:
        HostOperationError: ``state_conflict`` (with the evidence) when the mode's conditions do
            not hold; ``workspace_validation_failed`` when the path is not a checkout.
    """
    now = await _inspect(git, repo_root, path, recorded_branch)
    if mode in ("forward", "override"):
        return _move_record(mode, now)
    return await _quarantine_restore(git, repo_root, path, now, rescue_ref, sink)
