"""Which repository a linked worktree belongs to, read from the worktree itself (its ``.git``
file points at ``<common dir>/worktrees/<name>``, whose ``commondir`` names the common git
directory): what ``git rev-parse --git-common-dir`` answers, without running git."""

from __future__ import annotations

from pathlib import Path

__all__ = ["worktree_repository"]


def worktree_repository(path: Path) -> Path | None:
    """The repository root (the common git directory's parent; the directory itself when bare)
    of the linked worktree at ``path``, or None when there is no readable linked worktree."""
    try:
        pointer = (path / ".git").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not pointer.startswith("gitdir:"):
        return None
    gitdir = Path(pointer.removeprefix("gitdir:").strip())
    gitdir = gitdir if gitdir.is_absolute() else path / gitdir
    try:
        common_text = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    common = Path(common_text)
    common = (common if common.is_absolute() else gitdir / common).resolve()
    if not common.is_dir():
        return None
    return common.parent if common.name == ".git" else common
