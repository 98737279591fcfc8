"""Carrying a worktree's work between nodes through the project's remote (docs/scale-out.md,
"Draining a node"): the drained node pushes its rescue commit under ``refs/clipyard/moves/...``
and the receiving node fetches that ref into its own clone. Nothing else of the remote changes:
no branch is pushed, so nothing looks delivered."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from contracts.errors import ErrorCode
from workspace_realizer.adapters.ports import HostOperationError
from workspace_realizer.adapters.probes import rev_parse

if TYPE_CHECKING:
    from pathlib import Path

    from workspace_realizer.adapters.gitcli import GitRunner
    from workspace_realizer.adapters.ports import GitInvocation, StepSink

__all__ = ["CARRY_TIMEOUT", "MOVE_REF_PREFIX", "drop_pushed_refs", "fetch_ref", "push_ref"]

MOVE_REF_PREFIX = "refs/clipyard/moves/"
CARRY_TIMEOUT = 600.0
"""Seconds for one push or fetch of a large history."""


def _check(ref: str) -> None:
    tail = ref.removeprefix(MOVE_REF_PREFIX)
    if not ref.startswith(MOVE_REF_PREFIX) or not re.fullmatch(
        r"[0-9a-f-]{36}(/rescue-\d+)?", tail
    ):
        raise HostOperationError(
            f'"{ref}" is not a move ref ({MOVE_REF_PREFIX}<workspace id>)',
            code=ErrorCode.VALIDATION_FAILED,
        )


async def push_ref(
    git: GitRunner,
    *,
    repo_root: Path,
    remote_url: str,
    sha: str,
    ref: str,
    auth: GitInvocation | None,
    sink: StepSink,
) -> None:
    """Push commit ``sha`` to ``ref`` on ``remote_url`` (forced: the ref is this move's own).

    Raises:
        HostOperationError: The remote refused it or could not be reached (git's message).
    """
    _check(ref)
    await git.run(
        ["push", "--no-verify", "--quiet", remote_url, f"+{sha}:{ref}"],
        cwd=repo_root,
        auth=auth,
        phase="workspace_rescue",
        sink=sink,
        check=True,
        timeout=CARRY_TIMEOUT,
        metadata={"ref": ref, "sha": sha, "pushed": True},
    )


async def fetch_ref(
    git: GitRunner,
    *,
    repo_root: Path,
    remote_url: str,
    ref: str,
    expected_sha: str,
    auth: GitInvocation | None,
    sink: StepSink,
) -> None:
    """Fetch ``ref`` from ``remote_url`` into the same ref here, and check it is
    ``expected_sha`` (what the drained node pushed).

    Raises:
        HostOperationError: The fetch failed, or the remote's ref holds another commit.
    """
    _check(ref)
    await git.run(
        ["fetch", "--no-tags", "--quiet", remote_url, f"+{ref}:{ref}"],
        cwd=repo_root,
        auth=auth,
        phase="workspace_restore",
        sink=sink,
        check=True,
        timeout=CARRY_TIMEOUT,
        metadata={"ref": ref, "sha": expected_sha},
    )
    got = await rev_parse(git, repo_root, ref)
    if got != expected_sha:
        raise HostOperationError(
            f"The remote's {ref} is {got}, not the {expected_sha} the drained node pushed",
            code=ErrorCode.STATE_CONFLICT,
        )


async def drop_pushed_refs(
    git: GitRunner,
    *,
    repo_root: Path,
    remote_url: str,
    refs: list[str],
    auth: GitInvocation | None,
    sink: StepSink,
) -> None:
    """Delete ``refs`` (move refs) from ``remote_url``.

    Raises:
        HostOperationError: The remote refused it.
    """
    for ref in refs:
        _check(ref)
    await git.run(
        ["push", "--no-verify", "--quiet", remote_url, *(f":{ref}" for ref in refs)],
        cwd=repo_root,
        auth=auth,
        phase="workspace_rescue",
        sink=sink,
        check=True,
        timeout=CARRY_TIMEOUT,
        metadata={"refs": refs, "deleted": True},
    )
