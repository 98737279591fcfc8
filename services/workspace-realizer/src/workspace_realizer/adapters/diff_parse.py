"""Reading ``git diff --numstat -z`` and ``--name-status -z``, and showing git's raw names.

Git's output is decoded with ``surrogateescape`` (:mod:`~workspace_realizer.adapters.gitcli`):
a name that is not UTF-8 keeps its bytes as surrogates, which git understands back in argv but
JSON cannot carry. :func:`shown` is the name a person (and the API) sees.
"""

from __future__ import annotations

from typing import Final

from contracts.workspace_diff import FileStatus

__all__ = ["parse_name_status", "parse_numstat", "shown"]

_STATUS: Final[dict[str, FileStatus]] = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type_changed",
    "U": "unmerged",
}


def shown(raw: str) -> str:
    """``raw`` as UTF-8 text, bytes that are not UTF-8 replaced (U+FFFD)."""
    return raw.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def parse_numstat(out: str) -> dict[str, tuple[int | None, int | None]]:
    """``added\\tdeleted\\tpath\\0``, or for a rename ``added\\tdeleted\\t\\0old\\0new\\0``:
    the raw new path → (added, deleted), ``None`` for a binary file's counts."""
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


def parse_name_status(out: str) -> list[tuple[FileStatus, str | None, str]]:
    """``M\\0path\\0``, or for a rename or copy ``R100\\0old\\0new\\0``: (status, raw old path
    or ``None``, raw path)."""
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
