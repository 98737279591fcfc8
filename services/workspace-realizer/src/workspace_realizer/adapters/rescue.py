"""Rescue commits (DECISIONS 3): HEAD plus every tracked change and untracked non-ignored file,
written under a ref without touching the worktree, its index or its branch.

The worktree's index is copied to a temporary file (``GIT_INDEX_FILE``), ``git add --all`` runs
against the copy, ``write-tree`` and ``commit-tree`` (parent HEAD) make the commit and ``update-ref``
names it. A clean tree whose branch merely holds undelivered commits gives a ref at HEAD itself.
A rescue commit carries the trailer ``Clipyard-Rescue-Of: <HEAD>`` so a restore can tell it from
a plain HEAD.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from contracts.errors import ErrorCode
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import HostOperationError, RescueRef, StepSink
from workspace_realizer.adapters.probes import rev_parse

__all__ = [
    "IDENTITY_ENV",
    "RESCUE_ADD_TIMEOUT",
    "RESCUE_TRAILER",
    "rescued_head",
    "write_rescue_ref",
]

RESCUE_TRAILER = "Clipyard-Rescue-Of"
RESCUE_ADD_TIMEOUT = 600.0
"""Seconds for hashing every changed and untracked file of a large tree."""
IDENTITY_ENV = {
    "GIT_AUTHOR_NAME": "Clipyard",
    "GIT_AUTHOR_EMAIL": "clipyard@localhost",
    "GIT_COMMITTER_NAME": "Clipyard",
    "GIT_COMMITTER_EMAIL": "clipyard@localhost",
}
_TRAILER = re.compile(rf"^{RESCUE_TRAILER}: (?P<head>[0-9a-f]{{40,64}}|none)$", re.MULTILINE)
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


async def rescued_head(git: GitRunner, cwd: Path, sha: str) -> tuple[bool, str | None]:
    """Read a rescue ref's commit: ``(is_rescue_commit, head)``.

    Returns:
        ``(True, parent HEAD or None when it had none)`` for a rescue commit; ``(False, sha)`` when
        the ref points at a plain commit (a clean tree with undelivered commits).
    """
    body = await git.run(["log", "-1", "--format=%B", sha, "--"], cwd=cwd, check=True)
    match = _TRAILER.search(body.stdout)
    if match is None:
        return False, sha
    head = match.group("head")
    return True, None if head == "none" else head


async def _check_ref(git: GitRunner, cwd: Path, ref: str) -> None:
    result = await git.run(["check-ref-format", ref], cwd=cwd)
    if not ref.startswith("refs/") or ref.startswith("refs/heads/") or not result.ok:
        raise HostOperationError(
            f'"{ref}" is not a valid rescue ref name', code=ErrorCode.VALIDATION_FAILED
        )


async def write_rescue_ref(
    git: GitRunner, *, repo_root: Path, path: Path, ref: str, message: str, sink: StepSink
) -> RescueRef | None:
    """Record the worktree at ``path`` under ``ref`` (the caller holds the repository lock).

    Returns:
        The rescue ref; None only when there is nothing at all (no commit and an empty tree).

    Raises:
        HostOperationError: The worktree is missing or git failed.
    """
    await _check_ref(git, repo_root, ref)
    if not fs.is_dir(path):
        raise HostOperationError(
            f'Cannot write a rescue ref: the worktree "{path}" does not exist',
            code=ErrorCode.STATE_CONFLICT,
        )
    head = await rev_parse(git, path, "HEAD")
    index = await git.run(
        ["rev-parse", "--path-format=absolute", "--git-path", "index"], cwd=path, check=True
    )
    meta = {"worktreePath": str(path), "ref": ref, "head": head}
    with tempfile.TemporaryDirectory(prefix="clipyard-rescue-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if fs.is_file(index.out):
            shutil.copyfile(index.out, env["GIT_INDEX_FILE"])
        elif head is not None:
            await git.run(["read-tree", head], cwd=path, env=env, check=True)
        await git.run(
            ["add", "--all"],
            cwd=path,
            env=env,
            phase="workspace_rescue",
            sink=sink,
            check=True,
            metadata=meta,
            timeout=RESCUE_ADD_TIMEOUT,
        )
        tree = (await git.run(["write-tree"], cwd=path, env=env, check=True)).out
    head_tree = (
        (await git.run(["rev-parse", f"{head}^{{tree}}"], cwd=path, check=True)).out
        if head
        else _EMPTY_TREE
    )
    if tree == head_tree:
        if head is None:
            return None
        sha, file_count = head, 0
    else:
        text = f"{message.rstrip()}\n\n{RESCUE_TRAILER}: {head or 'none'}\n"
        parents = ["-p", head] if head else []
        commit = await git.run(
            ["commit-tree", "--no-gpg-sign", *parents, tree],
            cwd=path,
            env=IDENTITY_ENV,
            stdin=text.encode(),
            phase="workspace_rescue",
            sink=sink,
            check=True,
            metadata=meta,
        )
        sha = commit.out
        names = await git.run(
            ["diff-tree", "-r", "--no-renames", "--name-only", "-z", head_tree, tree],
            cwd=path,
            check=True,
        )
        file_count = len([name for name in names.stdout.split("\0") if name])
    await git.run(
        ["update-ref", "-m", "clipyard: rescue", ref, sha],
        cwd=path,
        phase="workspace_rescue",
        sink=sink,
        check=True,
        metadata=meta | {"sha": sha, "fileCount": file_count},
    )
    return RescueRef(ref=ref, sha=sha, file_count=file_count, head=head)


async def drop_rescue_ref(
    git: GitRunner, *, repo_root: Path, ref: str, expected_sha: str, sink: StepSink
) -> bool:
    """Delete ``ref`` only while it still points at ``expected_sha`` (the caller holds the lock).

    Returns:
        True when the ref is gone (deleted now, or already absent).
    """
    await _check_ref(git, repo_root, ref)
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", expected_sha) or not expected_sha.strip("0"):
        raise HostOperationError(
            f"Cannot drop {ref}: {expected_sha!r} is not the commit it was written at",
            code=ErrorCode.VALIDATION_FAILED,
        )
    done = await git.run(
        ["update-ref", "-m", "clipyard: nothing to rescue", "-d", ref, expected_sha],
        cwd=repo_root,
        phase="workspace_rescue",
        sink=sink,
        metadata={"ref": ref},
    )
    if done.ok:
        return True
    still = await git.run(["rev-parse", "--verify", "--quiet", ref], cwd=repo_root)
    return not still.ok
