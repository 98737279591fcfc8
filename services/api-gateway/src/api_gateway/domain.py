"""The gateway's aggregates: companies, API keys and operator-page sessions.

Pure: no I/O. Keys and session ids are never stored in the clear, only their SHA-256 hashes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import posixpath
import re
import secrets
from datetime import datetime
from typing import Any, Final, Literal
from uuid import UUID, uuid5

from eventsourcing.domain import event

from contracts.errors import CodedError, ErrorCode
from eventstore import ClipyardAggregate

__all__ = [
    "ApiKey",
    "ApiKeyKind",
    "Company",
    "ForbiddenError",
    "GatewayError",
    "InvalidInputError",
    "InvalidIssuePrefixError",
    "InvalidNameError",
    "KeyKindNotAllowedError",
    "NotFoundError",
    "Session",
    "UnauthenticatedError",
    "check_root",
    "derive_issue_prefix",
    "hash_secret",
    "new_key",
    "new_session_secret",
]

ApiKeyKind = Literal["board", "agent"]

MAX_NAME_LENGTH: Final = 200
_PREFIX = re.compile(r"[A-Z]{1,10}")
_SESSION_NAMESPACE: Final = UUID("6f1c3a52-8f0e-5b8e-9d55-3f3c2b6a9e10")


class GatewayError(CodedError):
    """Base of every error the gateway raises on purpose; ``code``/``status`` feed the HTTP body."""

    code = ErrorCode.UNPROCESSABLE

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details


class UnauthenticatedError(GatewayError):
    """No credentials, or credentials that do not (or no longer) work."""

    code = ErrorCode.UNAUTHENTICATED


class ForbiddenError(GatewayError):
    """Authenticated, but not allowed to do this."""

    code = ErrorCode.FORBIDDEN


class NotFoundError(GatewayError):
    """No such resource, or one of another company (existence is not revealed)."""

    code = ErrorCode.NOT_FOUND


class InvalidNameError(GatewayError):
    """A name is empty or too long."""

    code = ErrorCode.INVALID_NAME


class InvalidIssuePrefixError(GatewayError):
    """An issue prefix is not 1-10 upper-case letters, or none can be derived from the name."""

    code = ErrorCode.INVALID_ISSUE_PREFIX


class InvalidInputError(GatewayError):
    """Well-formed but not allowed (an ``allowedRoots`` entry that is no folder below ``/``)."""

    code = ErrorCode.UNPROCESSABLE


class KeyKindNotAllowedError(GatewayError):
    """This principal may not create a key of this kind (yet)."""

    code = ErrorCode.KEY_KIND_NOT_ALLOWED


def hash_secret(secret: str) -> str:
    """The SHA-256 hex digest of a key, session id or CSRF token: all the store ever holds.

    Args:
        secret: The clear secret.

    Returns:
        64 lower-case hex digits.
    """
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_key(kind: str) -> str:
    """A fresh API key, ``cy_<kind>_<32 random bytes, URL-safe base64>``.

    Args:
        kind: The key kind (``board``, ``agent``).

    Returns:
        The clear key (shown once).
    """
    return f"cy_{kind}_{secrets.token_urlsafe(32)}"


def new_session_secret() -> str:
    """A fresh session id (32 random bytes, URL-safe base64)."""
    return secrets.token_urlsafe(32)


def csrf_token_of(session_id: str) -> str:
    """A session's CSRF token, derived from its (secret, HttpOnly) id: HMAC-SHA256 keyed by the
    session id, URL-safe base64. Whoever can compute it already holds the session, and a page
    server can render it again for any live session (after a gateway restart too) although the
    store keeps only its hash."""
    digest = hmac.new(session_id.encode(), b"clipyard-csrf-v1", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def derive_issue_prefix(name: str) -> str:
    """Up to four letters of ``name``, upper case (``Acme Corp`` -> ``ACME``).

    Args:
        name: The company name.

    Returns:
        The prefix, empty when the name has no ASCII letter.
    """
    return "".join(ch for ch in name if ch.isascii() and ch.isalpha())[:4].upper()


def check_name(name: str, *, what: str) -> str:
    """Return ``name`` stripped, or raise ``InvalidNameError`` when it is empty or too long."""
    stripped = name.strip()
    if not stripped:
        raise InvalidNameError(f"The {what} name is empty; give a name.", field="name")
    if len(stripped) > MAX_NAME_LENGTH:
        raise InvalidNameError(
            f"The {what} name is {len(stripped)} characters long; use at most {MAX_NAME_LENGTH}.",
            field="name",
        )
    return stripped


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


class ApiKey(ClipyardAggregate):
    """A board or agent key of one company. Only the key's hash is stored."""

    class Created(ClipyardAggregate.Created):
        """A key was issued (public without its hash: ``api_key.created.v1``)."""

        company_id: str
        name: str
        kind: str
        agent_id: str | None
        key_hash: str

    class Revoked(ClipyardAggregate.Event):
        """The key was revoked (public: ``api_key.revoked.v1``)."""

        company_id: str

    @classmethod
    def issue(
        cls, *, company_id: str, name: str, kind: str, agent_id: str | None, key_hash: str
    ) -> ApiKey:
        """Create a key record for a key already generated (and hashed) by the caller.

        Raises:
            InvalidNameError: The name is empty or too long.
            KeyKindNotAllowedError: ``agentId`` given for a board key, or missing for an agent key.
        """
        name = check_name(name, what="key")
        if kind == "board" and agent_id is not None:
            raise KeyKindNotAllowedError(
                "A board key belongs to no agent; leave out agentId.", field="agentId"
            )
        if kind == "agent" and not agent_id:
            raise KeyKindNotAllowedError(
                "An agent key needs agentId: the agent it acts for.", field="agentId"
            )
        return cls(
            company_id=company_id, name=name, kind=kind, agent_id=agent_id, key_hash=key_hash
        )

    @event(Created)
    def __init__(
        self, *, company_id: str, name: str, kind: str, agent_id: str | None, key_hash: str
    ) -> None:
        self.company_id = company_id
        self.name = name
        self.kind = kind
        self.agent_id = agent_id
        self.key_hash = key_hash
        self.revoked = False

    def revoke(self) -> bool:
        """Revoke the key; return False (and record nothing) when it was already revoked."""
        if self.revoked:
            return False
        self._revoked(company_id=self.company_id)
        return True

    @event(Revoked)
    def _revoked(self, company_id: str) -> None:
        # company_id rides on the event so that its public contract needs nothing else.
        self.revoked = True


class Session(ClipyardAggregate):
    """An operator-page session (private: never published). Its id derives from the hashed secret."""

    class Started(ClipyardAggregate.Created):
        """Someone signed in with a board key (private)."""

        session_hash: str
        csrf_hash: str
        company_id: str
        key_id: str
        expires_at: datetime

    class Ended(ClipyardAggregate.Event):
        """The session was signed out of (private)."""

    @staticmethod
    def create_id(session_hash: str) -> UUID:
        """The session's aggregate id: a UUID5 of the session id's hash (never of the id)."""
        return uuid5(_SESSION_NAMESPACE, session_hash)

    @event(Started)
    def __init__(
        self,
        *,
        session_hash: str,
        csrf_hash: str,
        company_id: str,
        key_id: str,
        expires_at: datetime,
    ) -> None:
        self.session_hash = session_hash
        self.csrf_hash = csrf_hash
        self.company_id = company_id
        self.key_id = key_id
        self.expires_at = expires_at
        self.ended = False

    def end(self) -> bool:
        """Sign out; return False (and record nothing) when the session had ended already."""
        if self.ended:
            return False
        self._ended()
        return True

    @event(Ended)
    def _ended(self) -> None:
        self.ended = True
