"""Single ``stat``-sized filesystem checks used by the async adapters.

They are plain functions on purpose: each is one system call on a local path, far cheaper than a
hop to a worker thread. Anything that walks a tree (removal) goes to a thread instead.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["abspath", "is_dir", "is_file", "lexists", "realpath"]


def lexists(path: str | Path) -> bool:
    """Whether anything (even a dangling symlink) is at ``path``."""
    return os.path.lexists(path)


def is_dir(path: str | Path) -> bool:
    """Whether ``path`` is a directory (following symlinks)."""
    return os.path.isdir(path)


def is_file(path: str | Path) -> bool:
    """Whether ``path`` is a regular file (following symlinks)."""
    return os.path.isfile(path)


def realpath(path: str | Path) -> str:
    """``path`` absolute, with symlinks resolved."""
    return os.path.realpath(path)


def abspath(path: str | Path) -> str:
    """``path`` made absolute (symlinks kept)."""
    return os.path.abspath(path)
