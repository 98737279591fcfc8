"""What a project workspace's source may be, whatever host it lands on: a ``repoUrl`` is one
git fetches from as a repository (``https://``, ``ssh://``, scp-like, ``file://`` or a path),
never a transport that runs a command (``ext::``) or an option (``-…``); a ``repoRef`` and a
``baseRef`` are refs, never options. And what of the host a company may name
(:class:`HostGrant`, docs/design/isolation.md), which the host part checks paths against
(:mod:`workspace_realizer.adapters.host_paths`, through the port
:class:`workspace_realizer.usecases.ports.HostPaths`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final
from urllib.parse import urlsplit

from servicekit.access import AccessDeniedError
from workspace_realizer.domain.errors import InvalidInputError, PathRequiredError

__all__ = [
    "HostGrant",
    "blank_to_none",
    "check_repo_ref",
    "check_repo_url_form",
    "check_source",
]


@dataclass(frozen=True, kw_only=True)
class HostGrant:
    """What of the host a company's project workspaces may name: any folder (``trusted``) or
    those under ``roots`` (the company's, plus the stack's ``CLIPYARD_ALLOWED_ROOTS``)."""

    company_id: str
    trusted: bool = False
    roots: tuple[str, ...] = ()

    def refuse(self, setting: str, value: str) -> AccessDeniedError:
        """The 403 of a host path this company may not name."""
        return AccessDeniedError(
            f"{setting} {value!r} is a path of this host, and company {self.company_id} may name "
            "host paths only under a root an admin allowed for it: ask an admin to allow the "
            f"folder (PUT /api/companies/{self.company_id}/host-access with allowedRoots), or "
            "use a remote repoUrl (Clipyard then manages the checkout).",
            field=setting,
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


def blank_to_none(value: str | None) -> str | None:
    """``value`` stripped, None when blank."""
    return (value or "").strip() or None


def check_source(cwd: str | None, repo_url: str | None) -> tuple[str | None, str | None]:
    """The checkout path and repository URL, stripped; at least one is needed.

    Raises:
        PathRequiredError: Neither is given.
        InvalidInputError: ``cwd`` is not an absolute path, or ``repoUrl`` carries credentials
            or a query.
    """
    cwd, repo_url = blank_to_none(cwd), blank_to_none(repo_url)
    if cwd is None and repo_url is None:
        raise PathRequiredError(
            "A project workspace needs cwd (a local checkout) or repoUrl (to clone); give one.",
            fields=["cwd", "repoUrl"],
        )
    if cwd is not None and not PurePosixPath(cwd).is_absolute():
        raise InvalidInputError(f"cwd {cwd!r} is not an absolute path.", field="cwd")
    if repo_url is not None:
        _check_no_credentials(repo_url)
    return cwd, repo_url


def _check_no_credentials(repo_url: str) -> None:
    """Refuse a URL carrying userinfo or a query: a token there would be stored, published and
    written to git's argv and config (DECISIONS 9)."""
    parts = urlsplit(repo_url) if "://" in repo_url else None
    web = parts is not None and parts.scheme.lower() in ("http", "https")
    if parts is not None and (parts.password or (web and "@" in parts.netloc)):
        raise InvalidInputError(
            "repoUrl must not carry a user name or token; store the token as the company secret "
            "GITHUB_TOKEN (or GITLAB_TOKEN) and give the plain https URL.",
            field="repoUrl",
        )
    if parts is not None and web and (parts.query or parts.fragment):
        raise InvalidInputError(
            "repoUrl must not carry a query string; put tokens in the company secrets "
            "(GITHUB_TOKEN, GITLAB_TOKEN) and give the plain https URL.",
            field="repoUrl",
        )
