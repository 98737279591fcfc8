"""The rule that cleanup never deletes a project checkout (DECISIONS 3; Paperclip #10555, #3207).

A directory is protected when it is, or contains, one of the given project checkouts, or when it
holds a ``.git`` *directory* of its own (a main checkout; a worktree has a ``.git`` file).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from contracts.errors import ErrorCode
from workspace_realizer.adapters import fs
from workspace_realizer.adapters.ports import HostOperationError

__all__ = [
    "COMPANY_IDS",
    "check_no_company_ancestor",
    "contains_path",
    "removal_refusal",
    "remove_local_directory",
]


def contains_path(outer: str | Path, inner: str | Path) -> bool:
    """Whether ``inner`` is ``outer`` or lies below it (symlinks resolved).

    Args:
        outer: The candidate container.
        inner: The candidate content.

    Returns:
        True when ``inner`` equals or is inside ``outer``.
    """
    a = fs.realpath(outer)
    b = fs.realpath(inner)
    return b == a or b.startswith(a.rstrip(os.sep) + os.sep)


def removal_refusal(path: str | Path, protected: Iterable[str | Path]) -> str | None:
    """Why ``path`` must not be deleted, or None when it may be.

    Args:
        path: The directory cleanup would delete.
        protected: Project workspace checkouts (their ``cwd``s, repository roots).

    Returns:
        The refusal warning (``Refusing to remove path ... because it contains the project
        workspace ...``), or None.
    """
    for checkout in protected:
        if contains_path(path, checkout):
            return (
                f'Refusing to remove path "{path}" because it contains the project workspace '
                f'"{checkout}".'
            )
    if fs.is_dir(os.path.join(path, ".git")):
        return (
            f'Refusing to remove path "{path}" because it is a git checkout of its own (it has a '
            ".git directory)."
        )
    return None


async def remove_local_directory(
    path: Path, *, protected: Iterable[str | Path]
) -> tuple[bool, str | None]:
    """Delete a runtime-created local directory unless it is or contains a project checkout.

    Args:
        path: The directory.
        protected: Project workspace checkouts that must survive.

    Returns:
        ``(cleaned, warning)``: cleaned is True when the path no longer exists; the warning
        names a refusal or a failure.
    """
    refusal = removal_refusal(path, protected)
    if refusal is not None:
        return False, refusal
    try:
        await asyncio.to_thread(_remove, path)
    except OSError as exc:
        return False, f'Could not remove "{path}": {exc}'
    return not fs.lexists(path), None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


COMPANY_IDS: Final = 1_200_000
"""The lowest uid of a company's contained processes (docs/design/isolation.md)."""


def check_no_company_ancestor(path: Path) -> None:
    """Refuse a worktree path below a folder (or a link) a company's processes own: root's git
    and ``mkdir`` would follow whatever a contained process put there (a link to ``/etc``).

    Raises:
        HostOperationError: Naming the folder.
    """
    for folder in (path, *path.parents):
        try:
            owner = os.lstat(folder).st_uid
        except FileNotFoundError:
            continue
        if owner >= COMPANY_IDS:
            raise HostOperationError(
                f"The worktree {path} would lie inside {folder}, which a company's processes own "
                "(another workspace's folder): choose a worktreeParentDir outside every worktree.",
                code=ErrorCode.WORKSPACE_VALIDATION_FAILED,
                details={"path": str(path)},
            )
