"""Checks of project-workspace sources against this host, made when a board key saves them.

A project checkout (``cwd``) is protected from deletion and worktrees never go inside it, so it
must be a real project directory: not ``/``, not the home directory, not inside
``$CLIPYARD_HOME`` (where Clipyard keeps its own state and worktrees).
"""

from __future__ import annotations

import os
from pathlib import Path

from workspace_realizer.domain.errors import InvalidInputError

__all__ = ["check_host_source", "clipyard_home"]


def clipyard_home() -> Path:
    """``$CLIPYARD_HOME`` as the service resolves it (default ``~/.clipyard``)."""
    return Path(os.environ.get("CLIPYARD_HOME") or "~/.clipyard").expanduser().resolve()


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_host_source(cwd: str | None, repo_url: str | None) -> None:
    """Refuse a ``cwd`` that is not a project directory here, or a local ``repoUrl`` inside
    ``$CLIPYARD_HOME``. Blank values are left to the domain's own checks.

    Raises:
        InvalidInputError: Naming the field and what to give instead.
    """
    home = clipyard_home()
    cwd = (cwd or "").strip()
    if cwd and cwd.startswith("/"):
        path = Path(cwd).resolve(strict=False)
        user_home = Path(os.path.expanduser("~")).resolve(strict=False)
        if path == Path("/") or path == user_home:
            raise InvalidInputError(
                f"cwd {cwd!r} is not a project checkout; give the repository's own directory.",
                field="cwd",
            )
        if _inside(path, home):
            raise InvalidInputError(
                f"cwd {cwd!r} lies inside CLIPYARD_HOME ({home}), which Clipyard manages; give "
                "a checkout outside it.",
                field="cwd",
            )
        if not path.is_dir():
            raise InvalidInputError(
                f"cwd {cwd!r} is not an existing directory on this host; check the path.",
                field="cwd",
            )
    url = (repo_url or "").strip()
    local = url.removeprefix("file://") if url.startswith(("/", "file://", "~")) else None
    if local:
        try:
            path = Path(local).expanduser().resolve(strict=False)
        except RuntimeError as exc:
            raise InvalidInputError(
                f"repoUrl {url!r} names an unknown home directory.", field="repoUrl"
            ) from exc
        if _inside(path, home):
            raise InvalidInputError(
                f"repoUrl {url!r} lies inside CLIPYARD_HOME ({home}), which Clipyard manages; "
                "give a repository outside it.",
                field="repoUrl",
            )
