"""Where an untrusted run's git data lives, from trusted facts only (ARCHITECTURE §6).

The supervisor runs as root and hands parts of a repository to a slot user, so it must not follow
pointers an agent could have written. The worktree (the workspace's ``cwd``), the repository
(its project workspace's checkout) and the branch come from the supervisor's own copies of the
realizer's events; the only thing read from the disk is the worktree's name under
``<common>/worktrees/``, and it is accepted only when every pointer agrees:

- no symbolic link on the worktree's, the repository's or the git dirs' paths;
- ``<repo>/.git`` is a directory (the common git dir);
- ``<worktree>/.git`` is a regular file saying exactly ``gitdir: <common>/worktrees/<name>``;
- ``<git_dir>/gitdir`` says ``<worktree>/.git`` and ``<git_dir>/commondir`` leads to the common
  git dir;
- the branch is a plain ref name (``refs/heads/<branch>``, no ``..``, no component starting
  with ``.`` or ending in ``.lock``).

Blocking (reads the disk): run it in a thread.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["GitLayout", "LayoutError", "trusted_layout"]

_POINTER_MAX: Final = 4096
_REF_PART: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+@-]*")


class LayoutError(ValueError):
    """The worktree's git pointers are not what Clipyard made: nothing is handed over."""


@dataclass(frozen=True, kw_only=True)
class GitLayout:
    """A verified linked worktree.

    ``git_dir``: its own git dir ``<common>/worktrees/<name>``; ``common_dir``: the repository's
    shared git dir; ``branch``: the workspace's branch (``refs/heads/<branch>``).
    """

    worktree: Path
    git_dir: Path
    common_dir: Path
    branch: str

    @property
    def dot_git(self) -> Path:
        """The worktree's ``.git`` file."""
        return self.worktree / ".git"

    @property
    def pointers(self) -> tuple[Path, ...]:
        """The files that tie worktree and git dir together, kept root's and bound read-only
        during a run (``config.worktree`` included, so no per-worktree config can be planted)."""
        return (
            self.dot_git,
            self.git_dir / "gitdir",
            self.git_dir / "commondir",
            self.git_dir / "config.worktree",
        )

    @property
    def ref_parts(self) -> tuple[str, ...]:
        """``("heads", *branch parts)``: the branch's path below ``refs/`` and ``logs/refs/``."""
        return ("heads", *self.branch.split("/"))


def _plain_path(path: Path, what: str) -> Path:
    """``path`` when it is absolute, normalized and has no symbolic link on its way."""
    text = str(path)
    if not path.is_absolute() or os.path.normpath(text) != text:
        raise LayoutError(f"The {what} {text} is not an absolute, normalized path.")
    current = Path("/")
    for part in path.parts[1:]:
        current = current / part
        try:
            info = os.lstat(current)
        except OSError as exc:
            raise LayoutError(f"The {what} {text} cannot be reached ({exc.strerror}).") from None
        if stat.S_ISLNK(info.st_mode):
            raise LayoutError(f"The {what} {text} has a symbolic link on its path ({current}).")
    return path


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _pointer(path: Path) -> str:
    """The stripped text of a small regular file (no link followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise LayoutError(f"{path} cannot be read ({exc.strerror}).") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LayoutError(f"{path} is not a regular file.")
        data = os.read(fd, _POINTER_MAX + 1)
    finally:
        os.close(fd)
    if len(data) > _POINTER_MAX:
        raise LayoutError(f"{path} is too large for a git pointer.")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise LayoutError(f"{path} is not text.") from None


def _check_branch(branch: str) -> str:
    parts = branch.split("/")
    if not branch or any(
        not _REF_PART.fullmatch(p) or p.endswith(".lock") or ".." in p for p in parts
    ):
        raise LayoutError(f"The workspace's branch {branch!r} is not a plain branch name.")
    return branch


def trusted_layout(worktree: Path, repo_root: Path, branch: str) -> GitLayout:
    """The layout of the linked worktree ``worktree`` of ``repo_root`` on ``branch``.

    Args:
        worktree: The workspace's ``cwd`` (the supervisor's copy).
        repo_root: Its project workspace's checkout (the supervisor's copy).
        branch: The workspace's branch (the supervisor's copy).

    Raises:
        LayoutError: Anything disagrees (see the module's docstring); its message says what.
    """
    _check_branch(branch)
    _plain_path(worktree, "worktree")
    common = _plain_path(repo_root, "repository") / ".git"
    if not _is_dir(common):
        raise LayoutError(f"{common} is not the repository's git directory.")
    if not _is_dir(worktree):
        raise LayoutError(f"The worktree {worktree} is not a directory.")
    said = _pointer(worktree / ".git")
    if not said.startswith("gitdir: "):
        raise LayoutError(f"{worktree / '.git'} does not name a git dir.")
    git_dir = Path(said.removeprefix("gitdir: "))
    if git_dir.parent != common / "worktrees" or git_dir.name in ("", ".", ".."):
        raise LayoutError(
            f"{worktree / '.git'} points outside {common / 'worktrees'}: it was changed."
        )
    _plain_path(git_dir, "worktree's git dir")
    if not _is_dir(git_dir):
        raise LayoutError(f"The worktree's git dir {git_dir} is not a directory.")
    if _pointer(git_dir / "gitdir") != str(worktree / ".git"):
        raise LayoutError(f"{git_dir / 'gitdir'} does not point back at the worktree.")
    common_said = _pointer(git_dir / "commondir")
    if os.path.normpath(os.path.join(git_dir, common_said)) != str(common):
        raise LayoutError(f"{git_dir / 'commondir'} does not lead to {common}.")
    return GitLayout(worktree=worktree, git_dir=git_dir, common_dir=common, branch=branch)
