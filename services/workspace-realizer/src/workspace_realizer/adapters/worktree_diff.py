"""What a worktree changed against its base, read with git (contracts.workspace_diff).

From the merge base of ``HEAD`` and the base ref to the worktree as it is: ``git diff <merge
base>`` compares the working tree, so committed, staged and unstaged changes are one list. Without
a merge base (no base ref, or no shared history) the changes since ``HEAD`` are listed. Every
diff runs with ``--no-ext-diff --no-textconv`` (nothing configured runs) and literal pathspecs.

One file's unified diff is given only for a file of the lists, so no path reaches git that the
worktree did not name itself; an untracked file is read without git and without following a link
(:mod:`~workspace_realizer.adapters.untracked_file`). Names are shown as UTF-8 (bytes that are not
replaced), and asked for as shown. A git command that fails makes the answer ``available:
false`` with git's reason, never an empty list that reads as "no changes". The answer is kept
under :data:`MAX_REPLY_BYTES` encoded (the bus's messages are 1 MB at most): the patch, then the
lists, are cut first.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Final

import msgspec

from contracts.workspace_diff import (
    MAX_DIFF_COMMITS,
    MAX_DIFF_FILES,
    MAX_FILE_PATCH_BYTES,
    ChangedFile,
    DiffCommit,
    FilePatch,
    WorkspaceDiff,
)
from workspace_realizer.adapters.diff_parse import parse_name_status, parse_numstat, shown
from workspace_realizer.adapters.gitcli import GitResult, GitRunner
from workspace_realizer.adapters.probes import rev_parse
from workspace_realizer.adapters.untracked_file import (
    UnreadableFileError,
    as_added_patch,
    read_untracked,
)

__all__ = ["MAX_REPLY_BYTES", "NotAChangedFileError", "worktree_diff"]

MAX_REPLY_BYTES: Final = 768 * 1024
"""The encoded answer at most (the bus's limit is 1 MB)."""
_DIFF: Final = ["--literal-pathspecs", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"]
_LIMIT: Final = MAX_FILE_PATCH_BYTES + 4096
"""Bytes of a file's diff read into memory at most (the rest is counted, not kept)."""
_CUT: Final = (
    "\n[clipyard] the diff of this file is cut here: it has {total} bytes, {shown} shown\n"
)


class NotAChangedFileError(ValueError):
    """The file asked for is neither changed nor untracked in the worktree."""


class _GitFailedError(Exception):
    def __init__(self, result: GitResult) -> None:
        super().__init__(f"{result.step.command} failed: {result.message()}")


def _ok(result: GitResult) -> GitResult:
    if not result.ok:
        raise _GitFailedError(result)
    return result


async def worktree_diff(
    git: GitRunner, *, workspace_id: str, path: Path, base_ref: str | None, file: str | None
) -> WorkspaceDiff:
    """The diff of the worktree at ``path`` against ``base_ref``, with ``file``'s unified diff.

    Raises:
        NotAChangedFileError: ``file`` is given and is not one of the listed files.
    """
    try:
        head = await rev_parse(git, path, "HEAD")
        base = await _merge_base(git, path, base_ref) if head is not None else None
        since = base or head
        (commits, commits_total), files, untracked = await asyncio.gather(
            _commits(git, path, base), _files(git, path, since), _untracked(git, path)
        )
        patch = await _patch(git, path, since, file, files, untracked) if file else None
    except _GitFailedError as failed:
        return WorkspaceDiff(
            workspace_id=workspace_id,
            available=False,
            reason=f"git could not read the worktree: {failed}",
            base_ref=base_ref,
        )
    listed = [changed for changed, _ in files]
    diff = WorkspaceDiff(
        workspace_id=workspace_id,
        available=True,
        base_ref=base_ref,
        merge_base=base,
        head_sha=head,
        commits=commits[:MAX_DIFF_COMMITS],
        commits_total=commits_total,
        commits_truncated=commits_total > MAX_DIFF_COMMITS,
        files=listed[:MAX_DIFF_FILES],
        files_total=len(listed),
        files_truncated=len(listed) > MAX_DIFF_FILES,
        additions=sum(f.additions or 0 for f in listed),
        deletions=sum(f.deletions or 0 for f in listed),
        untracked=[shown(name) for name in untracked[:MAX_DIFF_FILES]],
        untracked_total=len(untracked),
        untracked_truncated=len(untracked) > MAX_DIFF_FILES,
        patch=patch,
    )
    return _within_reply(diff)


def _within_reply(diff: WorkspaceDiff) -> WorkspaceDiff:
    """``diff`` cut until it encodes within :data:`MAX_REPLY_BYTES`: the patch's text first,
    then the lists halved, each cut said by its flag."""
    while len(msgspec.json.encode(diff)) > MAX_REPLY_BYTES:
        if diff.patch is not None and len(diff.patch.text) > 4096:
            text = diff.patch.text[: len(diff.patch.text) // 2]
            text += _CUT.format(total=diff.patch.total_bytes, shown=len(text.encode()))
            patch = msgspec.structs.replace(diff.patch, text=text, truncated=True)
            diff = msgspec.structs.replace(diff, patch=patch)
            continue
        longest = max(("files", "untracked", "commits"), key=lambda n: len(getattr(diff, n)))
        rows = getattr(diff, longest)
        if not rows:
            break
        diff = msgspec.structs.replace(
            diff, **{longest: rows[: len(rows) // 2], f"{longest}_truncated": True}
        )
    return diff


async def _merge_base(git: GitRunner, path: Path, base_ref: str | None) -> str | None:
    if not base_ref or await rev_parse(git, path, base_ref) is None:
        return None
    found = await git.run(["merge-base", "--end-of-options", base_ref, "HEAD"], cwd=path)
    return found.out or None if found.ok else None  # no shared history: none


async def _commits(git: GitRunner, path: Path, base: str | None) -> tuple[list[DiffCommit], int]:
    if base is None:
        return [], 0
    span = f"{base}..HEAD"
    counted = _ok(await git.run(["rev-list", "--count", span], cwd=path))
    fmt = "--format=%H%x1f%an%x1f%cI%x1f%s%x1e"  # unit and record separators
    log = _ok(
        await git.run(["log", "--no-color", f"--max-count={MAX_DIFF_COMMITS}", fmt, span], cwd=path)
    )
    rows = []
    for record in log.stdout.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) == 4:
            sha, author, when, subject = fields
            rows.append(
                DiffCommit(
                    sha=sha,
                    subject=shown(subject),
                    author_name=shown(author),
                    committed_at=datetime.fromisoformat(when),
                )
            )
    total = int(counted.out) if counted.out.isdigit() else len(rows)
    return rows, max(total, len(rows))


async def _files(
    git: GitRunner, path: Path, since: str | None
) -> list[tuple[ChangedFile, list[str]]]:
    """Each changed file (names shown) with the raw names git knows it by."""
    if since is None:
        return []
    numstat, names = await asyncio.gather(
        git.run([*_DIFF, "--numstat", "-z", since], cwd=path),
        git.run([*_DIFF, "--name-status", "-z", since], cwd=path),
    )
    counts = parse_numstat(_ok(numstat).stdout)
    files = []
    for status, old, new in parse_name_status(_ok(names).stdout):
        added, deleted = counts.get(new, (None, None))
        changed = ChangedFile(
            path=shown(new),
            status=status,
            old_path=shown(old) if old is not None else None,
            additions=added,
            deletions=deleted,
            binary=new in counts and added is None,
        )
        files.append((changed, [new] if old is None else [old, new]))
    return files


async def _untracked(git: GitRunner, path: Path) -> list[str]:
    listed = _ok(await git.run(["ls-files", "--others", "--exclude-standard", "-z"], cwd=path))
    return sorted(name for name in listed.stdout.split("\0") if name)


async def _patch(
    git: GitRunner,
    path: Path,
    since: str | None,
    file: str,
    files: list[tuple[ChangedFile, list[str]]],
    untracked: list[str],
) -> FilePatch:
    raw = next((raws for f, raws in files if file in (f.path, f.old_path)), None)
    if raw is not None and since is not None:
        result = _ok(await git.run([*_DIFF, since, "--", *raw], cwd=path, stdout_limit=_LIMIT))
        data, total = result.stdout.encode("utf-8", errors="surrogateescape"), result.stdout_bytes
    elif (name := next((n for n in untracked if shown(n) == file), None)) is not None:
        try:
            read = await asyncio.to_thread(read_untracked, path, name, _LIMIT)
        except UnreadableFileError as exc:
            raise NotAChangedFileError(str(exc)) from None
        data = as_added_patch(shown(name), read).encode()
        total = len(data) + max(read.size - len(read.data), 0)
    else:
        raise NotAChangedFileError(f"{file!r} is not a changed or untracked file of the workspace")
    text = data[:MAX_FILE_PATCH_BYTES].decode("utf-8", errors="replace")
    total = max(total, len(data))
    truncated = total > MAX_FILE_PATCH_BYTES
    if truncated:
        text += _CUT.format(total=total, shown=MAX_FILE_PATCH_BYTES)
    return FilePatch(path=file, text=text, truncated=truncated, total_bytes=total)
