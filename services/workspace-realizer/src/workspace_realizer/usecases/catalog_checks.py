"""Checks of project-workspace sources against this host, made when a board key saves them.

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
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from servicekit.access import AccessDeniedError
from workspace_realizer.domain.errors import InvalidInputError

__all__ = [
    "HostGrant",
    "check_host_source",
    "check_repo_ref",
    "check_repo_url_form",
    "check_worktree_parent_dir",
    "clipyard_home",
    "stack_roots",
]


@dataclass(frozen=True, kw_only=True)
class HostGrant:
    """What of the host a company's project workspaces may name: any folder (``trusted``) or
    those under ``roots`` (the company's, plus the stack's ``CLIPYARD_ALLOWED_ROOTS``)."""

    company_id: str
    trusted: bool = False
    roots: tuple[str, ...] = ()

    def allows(self, path: Path) -> bool:
        """Whether ``path`` (resolved) lies under an allowed root."""
        if self.trusted:
            return True
        return any(
            _inside(path, Path(root).resolve(strict=False))
            for root in (*self.roots, *stack_roots())
        )

    def refuse(self, setting: str, value: str) -> AccessDeniedError:
        """The 403 of a host path this company may not name."""
        return AccessDeniedError(
            f"{setting} {value!r} is a path of this host, and company {self.company_id} may name "
            "host paths only under a root an admin allowed for it: ask an admin to allow the "
            f"folder (PUT /api/companies/{self.company_id}/host-access with allowedRoots), or "
            "use a remote repoUrl (Clipyard then manages the checkout).",
            field=setting,
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
        if not grant.allows(path):
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
        if not grant.allows(path):
            raise grant.refuse("repoUrl", url)
        if _inside(path, home):
            raise InvalidInputError(
                f"repoUrl {url!r} lies inside CLIPYARD_HOME ({home}), which Clipyard manages; "
                "give a repository outside it.",
                field="repoUrl",
            )


_SCP_LIKE: Final = re.compile(r"^(?:[A-Za-z0-9._~+-]+@)?[A-Za-z0-9][A-Za-z0-9.-]*:(?!//)\S+$")
_SAFE_TEXT: Final = re.compile(r"[^\s\x00-\x1f\x7f]+")
_NOT_IN_REFS: Final = re.compile(r"[:*?\[\\^~]")
"""What ``git check-ref-format`` refuses (a ``:`` or ``*`` would also change a refspec)."""


def check_repo_url_form(url: str) -> None:
    """Refuse a ``repoUrl`` git would read as anything but a repository: only ``https://``,
    ``ssh://``, scp-like ``user@host:path``, ``file://`` and local paths (whose use the host
    grant decides). No ``ext::`` (it runs a command), no leading ``-`` (an option).

    Raises:
        InvalidInputError: Naming ``repoUrl`` and the forms that work.
    """
    if not url:
        return
    ok = (
        _SAFE_TEXT.fullmatch(url) is not None
        and not url.startswith("-")
        and (
            url.startswith(("https://", "ssh://", "file://", "/", "~"))
            or (_SCP_LIKE.fullmatch(url) is not None and "::" not in url)
        )
    )
    if not ok:
        shown = url if len(url) <= 80 else url[:80] + "…"
        raise InvalidInputError(
            f"repoUrl {shown!r} is not a repository URL git may fetch from; give "
            "https://host/path, ssh://host/path, user@host:path, or a local path.",
            field="repoUrl",
        )


def check_repo_ref(ref: object, field: str = "repoRef") -> None:
    """Refuse a ref git would read as an option or that no ref can be (blank inside, leading
    ``-``, control characters, ``..``, ``@{``, any of ``: * ? [ \\ ^ ~``, longer than 255).

    Raises:
        InvalidInputError: Naming the field.
    """
    if ref is None or ref == "":
        return
    text = str(ref)
    if (
        len(text) > 255
        or text.startswith("-")
        or not _SAFE_TEXT.fullmatch(text)
        or ".." in text
        or "@{" in text
        or _NOT_IN_REFS.search(text)
    ):
        shown = text if len(text) <= 80 else text[:80] + "…"
        raise InvalidInputError(
            f"{field} {shown!r} is not a git ref; give a branch, tag or commit such as main.",
            field=field,
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
    if not grant.allows(path):
        raise grant.refuse(setting, text)
