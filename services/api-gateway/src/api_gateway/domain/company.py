"""A company: the tenant everything else belongs to, its issue prefix and its host access.

Pure: no I/O.
"""

from __future__ import annotations

import posixpath
import re

from eventsourcing.domain import event

from api_gateway.domain.errors import InvalidInputError, InvalidIssuePrefixError
from api_gateway.domain.names import check_name, derive_issue_prefix
from eventstore import ClipyardAggregate

__all__ = ["Company", "check_root"]

_PREFIX = re.compile(r"[A-Z]{1,10}")


class Company(ClipyardAggregate):
    """A tenant: everything else belongs to one company."""

    class Created(ClipyardAggregate.Created):
        """A company was created (public: ``company.created.v1``)."""

        name: str
        issue_prefix: str

    @classmethod
    def register(cls, *, name: str, issue_prefix: str | None = None) -> Company:
        """Create a company, deriving the issue prefix from the name when none is given.

        Raises:
            InvalidNameError: The name is empty or too long.
            InvalidIssuePrefixError: The prefix is not 1-10 upper-case letters.
        """
        name = check_name(name, what="company")
        prefix = derive_issue_prefix(name) if issue_prefix is None else issue_prefix
        cls.check_issue_prefix(prefix, given=issue_prefix is not None)
        return cls(name=name, issue_prefix=prefix)

    @staticmethod
    def check_issue_prefix(prefix: str, *, given: bool) -> None:
        """Raise ``InvalidIssuePrefixError`` unless ``prefix`` is 1-10 upper-case letters A-Z."""
        if _PREFIX.fullmatch(prefix):
            return
        if not given:
            raise InvalidIssuePrefixError(
                "The company name has no letter to derive an issue prefix from; "
                "give issuePrefix (1-10 upper-case letters, like ACME).",
                field="issuePrefix",
            )
        raise InvalidIssuePrefixError(
            f"issuePrefix {prefix!r} is not 1-10 upper-case letters A-Z; use something like ACME.",
            field="issuePrefix",
        )

    class HostAccessChanged(ClipyardAggregate.Event):
        """An admin changed what of the host the company may use (public:
        ``company.host_access_changed.v1``)."""

        host_trusted: bool
        allowed_roots: list[str]

    @event(Created)
    def __init__(self, *, name: str, issue_prefix: str) -> None:
        self.name = name
        self.issue_prefix = issue_prefix

    def change_host_access(self, *, host_trusted: bool, allowed_roots: list[str]) -> None:
        """Replace the company's host access (the admin key's decision).

        Raises:
            InvalidInputError: A root is not an absolute, normalized folder other than ``/``.
        """
        roots = [check_root(root) for root in allowed_roots]
        self._host_access_changed(host_trusted=host_trusted, allowed_roots=sorted(set(roots)))

    @event(HostAccessChanged)
    def _host_access_changed(self, *, host_trusted: bool, allowed_roots: list[str]) -> None:
        self.host_trusted = host_trusted
        self.allowed_roots = allowed_roots


def check_root(root: str) -> str:
    """``root`` when it is an absolute folder path without ``..`` other than ``/``.

    Raises:
        InvalidInputError: Naming ``allowedRoots`` and what to give.
    """
    text = root.strip()
    normal = posixpath.normpath(text) if text else ""
    if not text.startswith("/") or ".." in text.split("/") or normal == "/":
        raise InvalidInputError(
            f"allowedRoots entry {root!r} is not an absolute folder below /: give folders like "
            "/home/me/src (no '..', not / itself).",
            field="allowedRoots",
        )
    return normal
