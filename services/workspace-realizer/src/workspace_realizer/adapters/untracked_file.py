"""An untracked file of a worktree as a unified diff against nothing, read without following any
symbolic link.

The worktree belongs to an untrusted agent, which can swap a folder for a symbolic link to
anywhere between the listing and the read. So the file is never handed to git: each component of
its path is opened relative to the one before it with ``O_NOFOLLOW`` (a folder with
``O_DIRECTORY``), starting from the worktree's own folder, and only a regular file is read; a
symbolic link shows its target, as git shows one, and is not followed.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["UnreadableFileError", "UntrackedFile", "as_added_patch", "read_untracked"]

_BINARY_PROBE = 8000
"""Bytes looked at for a NUL, as git decides a file is binary."""


class UnreadableFileError(ValueError):
    """The path is not a regular file or symbolic link inside the worktree (or went away)."""


@dataclass(frozen=True)
class UntrackedFile:
    """What was read: up to ``limit`` bytes of the file (or the link's target) and its size."""

    data: bytes
    size: int
    symlink: bool


def read_untracked(worktree: Path, name: str, limit: int) -> UntrackedFile:
    """Read ``name`` (relative, as ``git ls-files`` lists it) under ``worktree``, following no link.

    Raises:
        UnreadableFileError: A component is a link or missing, or the file is not regular.
    """
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise UnreadableFileError(f"{name!r} is not a path inside the worktree")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    folder = os.open(worktree, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = _open(part, flags | os.O_DIRECTORY, folder, name)
            os.close(folder)
            folder = inner
        return _read_last(parts[-1], flags, folder, name, limit)
    finally:
        os.close(folder)


def _open(part: str, flags: int, folder: int, name: str) -> int:
    try:
        return os.open(part, flags, dir_fd=folder)
    except OSError as exc:
        reason = "a symbolic link" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror
        raise UnreadableFileError(f"{name!r} cannot be read: {part!r} is {reason}") from None


def _read_last(part: str, flags: int, folder: int, name: str, limit: int) -> UntrackedFile:
    try:
        info = os.lstat(part, dir_fd=folder)
    except OSError as exc:
        raise UnreadableFileError(f"{name!r} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(part, dir_fd=folder).encode("utf-8", errors="surrogateescape")
        return UntrackedFile(data=target[:limit], size=len(target), symlink=True)
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableFileError(f"{name!r} is not a regular file")
    handle = _open(part, flags, folder, name)
    try:
        size = os.fstat(handle).st_size
        chunks: list[bytes] = []
        left = limit
        while left > 0 and (chunk := os.read(handle, min(left, 65536))):
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(handle)
    data = b"".join(chunks)
    return UntrackedFile(data=data, size=max(size, len(data)), symlink=False)


def as_added_patch(name: str, read: UntrackedFile) -> str:
    """The file as git's diff of a new file would show it (the text UTF-8, bad bytes replaced)."""
    header = (
        f"diff --git a/{name} b/{name}\nnew file mode {'120000' if read.symlink else '100644'}\n"
    )
    if b"\0" in read.data[:_BINARY_PROBE]:
        return f"{header}Binary files /dev/null and b/{name} differ\n"
    lines = read.data.decode("utf-8", errors="replace").splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return f"{header}--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{len(lines)} @@\n{body}"
