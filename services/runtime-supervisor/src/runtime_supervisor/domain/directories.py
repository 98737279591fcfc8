"""Whose directory a path lies in: the rules an archive's stop follows (reference §6.3)."""

from __future__ import annotations

import os.path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime_supervisor.domain.targets import RuntimeTarget

__all__ = ["inside", "owns_directory"]


def inside(path: str | None, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies below it (lexically)."""
    if not path:
        return False
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def owns_directory(target: RuntimeTarget) -> bool:
    """Whether the target's directory is its own (an isolated worktree), not the project
    workspace's checkout it shares with others."""
    if not target.cwd or target.mode == "shared_workspace":
        return False
    checkout = target.project_workspace_cwd
    return checkout is None or os.path.normpath(checkout) != os.path.normpath(target.cwd)
