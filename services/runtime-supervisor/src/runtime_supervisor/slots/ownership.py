"""Who owns a worktree while an untrusted adapter runs in it (ARCHITECTURE §6).

Before the launch the worktree (and its private git dir ``<common>/worktrees/<name>``, which git
requires to be owned by the user running it) is handed to the slot user; the places of the
repository's common git dir where a commit writes (``objects``, ``refs``, ``logs``,
``packed-refs``) are made writable for the group ``clipyard-agents`` (directories setgid, so
new files stay in the group). ``hooks/`` and ``config`` stay root's and are bound read-only in
the sandbox. After the run the worktree and its private git dir go back to the service user.

The common git dir is found from the worktree's ``.git`` file (``gitdir: ...``) and that git
dir's ``commondir``; no git subprocess. Blocking: run these in a thread.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["GitLayout", "find_git_layout", "hand_back", "hand_over", "hand_over_scratch"]

_SHARED_WRITABLE: Final = ("objects", "refs", "logs")


@dataclass(frozen=True, kw_only=True)
class GitLayout:
    """Where a worktree's git data lives.

    ``git_dir``: the worktree's own git dir (``<common>/worktrees/<name>``; for a main checkout
    the same as ``common_dir``); ``common_dir``: the repository's shared git dir.
    """

    worktree: Path
    git_dir: Path
    common_dir: Path

    @property
    def linked(self) -> bool:
        """Whether the worktree is a linked worktree (``git worktree add``)."""
        return self.git_dir != self.common_dir


def find_git_layout(worktree: Path) -> GitLayout | None:
    """The git layout of ``worktree`` (None when it is no git checkout)."""
    dot_git = worktree / ".git"
    if dot_git.is_dir():
        real = dot_git.resolve()
        return GitLayout(worktree=worktree, git_dir=real, common_dir=real)
    try:
        text = dot_git.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = Path(text.removeprefix("gitdir:").strip())
    if not git_dir.is_absolute():
        git_dir = worktree / git_dir
    git_dir = git_dir.resolve()
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        common = ""
    common_dir = (git_dir / common).resolve() if common else git_dir
    if not common_dir.is_dir():
        return None
    return GitLayout(worktree=worktree, git_dir=git_dir, common_dir=common_dir)


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    """``chown -R uid:gid root`` without following symlinks."""
    os.lchown(root, uid, gid)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.lchown(os.path.join(folder, name), uid, gid)


def _group_writable(path: Path, gid: int) -> None:
    """Give ``path`` to group ``gid``: directories ``g+rwxs``, files ``g+w`` when their owner
    may write them (objects stay read-only)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return
    os.lchown(path, -1, gid)
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISDIR(info.st_mode):
        os.chmod(path, mode | stat.S_IRWXG | stat.S_ISGID)
    elif mode & stat.S_IWUSR:
        os.chmod(path, mode | stat.S_IRGRP | stat.S_IWGRP)


def _share(root: Path, gid: int) -> None:
    if not root.exists():
        return
    _group_writable(root, gid)
    if root.is_dir():
        for folder, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                _group_writable(Path(folder) / name, gid)


def hand_over(layout: GitLayout, uid: int, gid: int) -> None:
    """Hand the worktree to the slot user ``uid`` and share the common git dir with ``gid``.

    ``hooks/`` is created (root's, empty) when missing, so the sandbox can bind it read-only
    and no hook can be planted there.
    """
    (layout.common_dir / "hooks").mkdir(mode=0o755, exist_ok=True)
    _chown_tree(layout.worktree, uid, gid)
    if layout.linked:
        _chown_tree(layout.git_dir, uid, gid)
    for name in _SHARED_WRITABLE:
        folder = layout.common_dir / name
        folder.mkdir(mode=0o775, exist_ok=True)
        _share(folder, gid)
    _share(layout.common_dir / "packed-refs", gid)


def hand_over_scratch(folder: Path, uid: int, gid: int) -> None:
    """Hand a per-run scratch folder (no git checkout) to the slot user."""
    _chown_tree(folder, uid, gid)


def hand_back(worktree: Path, layout: GitLayout | None) -> None:
    """Give the worktree (and its private git dir) back to the service user."""
    uid, gid = os.getuid(), os.getgid()
    if worktree.exists():
        _chown_tree(worktree, uid, gid)
    if layout is not None and layout.linked and layout.git_dir.exists():
        _chown_tree(layout.git_dir, uid, gid)
