"""What a worktree changed against its base, read with git (contracts.workspace_diff).

From the merge base of ``HEAD`` and the base ref to the worktree as it is: ``git diff <merge
base>`` compares the working tree, so committed, staged and unstaged changes are one list. Without
a merge base (no base ref, or no shared history) the changes since ``HEAD`` are listed. Every
diff runs with ``--no-ext-diff --no-textconv`` (nothing configured runs) and literal pathspecs;
one file's unified diff is given only for a file of the lists, so no path reaches git that the
worktree did not name itself.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from contracts.workspace_diff import (
    MAX_DIFF_COMMITS,
    MAX_DIFF_FILES,
    MAX_FILE_PATCH_BYTES,
    ChangedFile,
    DiffCommit,
    FilePatch,
    FileStatus,
    WorkspaceDiff,
)
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.probes import rev_parse

__all__ = ["NotAChangedFileError", "worktree_diff"]

_DIFF = ["--literal-pathspecs", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"]
_STATUS: dict[str, FileStatus] = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type_changed",
    "U": "unmerged",
}
_LIMIT = MAX_FILE_PATCH_BYTES + 4096
"""Bytes of a file's diff read into memory at most (the rest is counted, not kept)."""
_CUT = "\n[clipyard] the diff of this file is cut here: it has {total} bytes, {shown} are shown\n"


class NotAChangedFileError(ValueError):
    """The file asked for is neither changed nor untracked in the worktree."""


async def worktree_diff(
    git: GitRunner, *, workspace_id: str, path: Path, base_ref: str | None, file: str | None
) -> WorkspaceDiff:
    """The diff of the worktree at ``path`` against ``base_ref``.

    Raises:
        NotAChangedFileError: ``file`` is given and is not one of the listed files.
    """
    head = await rev_parse(git, path, "HEAD")
    base = await _merge_base(git, path, base_ref) if head is not None else None
    since = base or head
    commits, files, untracked = await asyncio.gather(
        _commits(git, path, base),
        _files(git, path, since),
        _untracked(git, path),
    )
    commit_rows, commits_total = commits
    patch = None
    if file is not None:
        patch = await _patch(git, path, since, file, files, untracked)
    return WorkspaceDiff(
        workspace_id=workspace_id,
        available=True,
        base_ref=base_ref,
        merge_base=base,
        head_sha=head,
        commits=commit_rows[:MAX_DIFF_COMMITS],
        commits_total=commits_total,
        commits_truncated=commits_total > MAX_DIFF_COMMITS,
        files=files[:MAX_DIFF_FILES],
        files_total=len(files),
        files_truncated=len(files) > MAX_DIFF_FILES,
        additions=sum(f.additions or 0 for f in files),
        deletions=sum(f.deletions or 0 for f in files),
        untracked=untracked[:MAX_DIFF_FILES],
        untracked_total=len(untracked),
        untracked_truncated=len(untracked) > MAX_DIFF_FILES,
        patch=patch,
    )


async def _merge_base(git: GitRunner, path: Path, base_ref: str | None) -> str | None:
    if not base_ref or await rev_parse(git, path, base_ref) is None:
        return None
    found = await git.run(["merge-base", "--end-of-options", base_ref, "HEAD"], cwd=path)
    return found.out or None if found.ok else None


async def _commits(git: GitRunner, path: Path, base: str | None) -> tuple[list[DiffCommit], int]:
    if base is None:
        return [], 0
    span = f"{base}..HEAD"
    counted = await git.run(["rev-list", "--count", span], cwd=path)
    total = int(counted.out) if counted.ok and counted.out.isdigit() else 0
    fmt = "--format=%H%x1f%an%x1f%cI%x1f%s%x1e"  # unit and record separators
    log = await git.run(
        ["log", "--no-color", f"--max-count={MAX_DIFF_COMMITS}", fmt, span], cwd=path
    )
    rows = []
    for record in log.stdout.split("\x1e") if log.ok else []:
        fields = record.strip("\n").split("\x1f")
        if len(fields) == 4:
            sha, author, when, subject = fields
            rows.append(
                DiffCommit(
                    sha=sha,
                    subject=subject,
                    author_name=author,
                    committed_at=datetime.fromisoformat(when),
                )
            )
    return rows, max(total, len(rows))


async def _files(git: GitRunner, path: Path, since: str | None) -> list[ChangedFile]:
    if since is None:
        return []
    numstat, names = await asyncio.gather(
        git.run([*_DIFF, "--numstat", "-z", since], cwd=path),
        git.run([*_DIFF, "--name-status", "-z", since], cwd=path),
    )
    counts = _parse_numstat(numstat.stdout) if numstat.ok else {}
    files = []
    for status, old, new in _parse_name_status(names.stdout) if names.ok else []:
        added, deleted = counts.get(new, (None, None))
        binary = new in counts and added is None
        files.append(
            ChangedFile(
                path=new,
                status=status,
                old_path=old,
                additions=added,
                deletions=deleted,
                binary=binary,
            )
        )
    return files


def _parse_numstat(out: str) -> dict[str, tuple[int | None, int | None]]:
    """``added\\tdeleted\\tpath\\0``, or for a rename ``added\\tdeleted\\t\\0old\\0new\\0``."""
    counts: dict[str, tuple[int | None, int | None]] = {}
    parts = out.split("\0")
    i = 0
    while i < len(parts) and parts[i]:
        added, deleted, name = parts[i].split("\t", 2)
        if not name:  # a rename or copy: the old and new paths follow
            name = parts[i + 2]
            i += 2
        counts[name] = (
            int(added) if added.isdigit() else None,
            int(deleted) if deleted.isdigit() else None,
        )
        i += 1
    return counts


def _parse_name_status(out: str) -> list[tuple[FileStatus, str | None, str]]:
    """``M\\0path\\0``, or for a rename or copy ``R100\\0old\\0new\\0``."""
    rows: list[tuple[FileStatus, str | None, str]] = []
    parts = out.split("\0")
    i = 0
    while i < len(parts) and parts[i]:
        letter = parts[i][0]
        status = _STATUS.get(letter, "unknown")
        if letter in "RC":
            rows.append((status, parts[i + 1], parts[i + 2]))
            i += 3
        else:
            rows.append((status, None, parts[i + 1]))
            i += 2
    return rows


async def _untracked(git: GitRunner, path: Path) -> list[str]:
    listed = await git.run(["ls-files", "--others", "--exclude-standard", "-z"], cwd=path)
    return sorted(name for name in listed.stdout.split("\0") if name) if listed.ok else []


async def _patch(
    git: GitRunner,
    path: Path,
    since: str | None,
    file: str,
    files: list[ChangedFile],
    untracked: list[str],
) -> FilePatch:
    changed = next((f for f in files if file in (f.path, f.old_path)), None)
    if changed is not None and since is not None:
        names = [changed.path] if changed.old_path is None else [changed.old_path, changed.path]
        result = await git.run([*_DIFF, since, "--", *names], cwd=path, stdout_limit=_LIMIT)
    elif file in untracked:
        # Against the empty file: the whole file, added (exit status 1 means "they differ").
        argv = [*_DIFF, "--no-index", "--", "/dev/null", file]
        result = await git.run(argv, cwd=path, stdout_limit=_LIMIT)
    else:
        raise NotAChangedFileError(f"{file!r} is not a changed or untracked file of the workspace")
    data = result.stdout.encode("utf-8", errors="surrogateescape")[:MAX_FILE_PATCH_BYTES]
    text = data.decode("utf-8", errors="replace")
    total = max(result.stdout_bytes, len(data))
    truncated = total > MAX_FILE_PATCH_BYTES
    if truncated:
        text += _CUT.format(total=total, shown=MAX_FILE_PATCH_BYTES)
    return FilePatch(path=file, text=text, truncated=truncated, total_bytes=total)
