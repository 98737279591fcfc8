"""Checks of project-workspace sources against this host, made when a board key saves them (the
host part's side of the port :class:`workspace_realizer.usecases.ports.HostPaths`).

No board key points the server at a host path (docs/design/isolation.md): a ``cwd``, a local or
``file://`` ``repoUrl`` and an absolute, ``~`` or ``..`` ``worktreeParentDir`` are refused (403
naming the setting) unless they lie under a root an admin allowed for the company
(``allowedRoots``, or ``CLIPYARD_ALLOWED_ROOTS`` for every company of the stack) or the company is
``hostTrusted``. A project checkout (``cwd``) is protected from deletion and worktrees never go
inside it, so it must also be a real project directory: not ``/``, not the home directory, not
inside ``$CLIPYARD_HOME`` (where Clipyard keeps its own state and worktrees). A ``repoUrl`` is
one git fetches from as a repository (``https://``, ``ssh://``, scp-like, ``file://`` or a
path), never a transport that runs a command (``ext::``) or an option (``-…``); a ``repoRef``
and a ``baseRef`` are refs, never options.
"""

from __future__ import annotations

import os
from pathlib import Path

from workspace_realizer.domain.errors import InvalidInputError
from workspace_realizer.domain.sources import HostGrant, check_repo_url_form

__all__ = [
    "HostPathChecks",
    "allows",
    "check_host_source",
    "check_worktree_parent_dir",
    "clipyard_home",
    "stack_roots",
]


class HostPathChecks:
    """The :class:`~workspace_realizer.usecases.ports.HostPaths` of this host."""

    def check_source(self, cwd: str | None, repo_url: str | None, grant: HostGrant) -> None:
        """:func:`check_host_source`."""
        check_host_source(cwd, repo_url, grant)

    def check_worktree_parent_dir(self, value: object, grant: HostGrant, setting: str) -> None:
        """:func:`check_worktree_parent_dir`."""
        check_worktree_parent_dir(value, grant, setting)


def allows(grant: HostGrant, path: Path) -> bool:
    """Whether ``path`` (resolved) lies under a root ``grant`` allows (any, when trusted)."""
    if grant.trusted:
        return True
    return any(
        _inside(path, Path(root).resolve(strict=False)) for root in (*grant.roots, *stack_roots())
    )


def stack_roots() -> tuple[str, ...]:
    """``CLIPYARD_ALLOWED_ROOTS``: folders every company of this stack may name (the operator's
    setting, ``:``-separated absolute paths)."""
    raw = os.environ.get("CLIPYARD_ALLOWED_ROOTS", "")
    return tuple(part for part in raw.split(":") if part.startswith("/"))


def clipyard_home() -> Path:
    """``$CLIPYARD_HOME`` as the service resolves it (default ``~/.clipyard``)."""
    return Path(os.environ.get("CLIPYARD_HOME") or "~/.clipyard").expanduser().resolve()


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def check_host_source(cwd: str | None, repo_url: str | None, grant: HostGrant) -> None:
    """Refuse a ``cwd`` or local ``repoUrl`` the company may not name, a ``cwd`` that is not a
    project directory here, or either inside ``$CLIPYARD_HOME``. Blank values are left to the
    domain's own checks.

    Raises:
        AccessDeniedError: A host path outside the company's allowed roots (403).
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
        if not allows(grant, path):
            raise grant.refuse("cwd", cwd)
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
    check_repo_url_form(url)
    local = url.removeprefix("file://") if url.startswith(("/", "file://", "~")) else None
    if local:
        try:
            path = Path(local).expanduser().resolve(strict=False)
        except RuntimeError as exc:
            raise InvalidInputError(
                f"repoUrl {url!r} names an unknown home directory.", field="repoUrl"
            ) from exc
        if not allows(grant, path):
            raise grant.refuse("repoUrl", url)
        if _inside(path, home):
            raise InvalidInputError(
                f"repoUrl {url!r} lies inside CLIPYARD_HOME ({home}), which Clipyard manages; "
                "give a repository outside it.",
                field="repoUrl",
            )


def check_worktree_parent_dir(
    value: object,
    grant: HostGrant,
    setting: str = "executionWorkspacePolicy.workspaceStrategy.worktreeParentDir",
) -> None:
    """Refuse an absolute, ``~`` or ``..`` ``worktreeParentDir`` outside the company's allowed
    roots (a relative one lies under ``$CLIPYARD_HOME``).

    Raises:
        AccessDeniedError: Naming the setting (403).
    """
    if not isinstance(value, str) or not value.strip():
        return
    text = value.strip()
    if ".." in Path(text).parts:
        if grant.trusted:
            return
        raise grant.refuse(setting, text)
    if not text.startswith(("/", "~")):
        return
    try:
        path = Path(text).expanduser().resolve(strict=False)
    except RuntimeError:
        raise grant.refuse(setting, text) from None
    if not allows(grant, path):
        raise grant.refuse(setting, text)
