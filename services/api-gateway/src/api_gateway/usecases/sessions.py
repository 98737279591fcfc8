"""Operator-page sessions: sign in with a board key, sign out, authenticate a session cookie and
its CSRF token."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from api_gateway.domain import (
    KeyKindNotAllowedError,
    Session,
    UnauthenticatedError,
    csrf_token_of,
    hash_secret,
    new_session_secret,
)
from api_gateway.readmodels import KeyRecord, SessionRecord
from api_gateway.usecases.api_keys import ApiKeyUseCases

__all__ = ["SessionStarted", "SessionUseCases"]


@dataclass(frozen=True)
class SessionStarted:
    """What signing in hands back once: the clear session id (cookie) and CSRF token."""

    session_id: str
    csrf_token: str
    company_id: str
    expires_at: datetime


class SessionUseCases(ApiKeyUseCases):
    """The session commands and queries (mixed into the gateway's application)."""

    def start_session(self, key: str, ttl: float) -> SessionStarted:
        """Exchange a live board key for a session (cookie id + CSRF token, both hashed here)."""
        record = self.authenticate_key(key)
        if record.kind != "board":
            raise KeyKindNotAllowedError("Sign in with a board key.", field="key")
        self.prune_sessions()
        session_id = new_session_secret()
        csrf = csrf_token_of(session_id)
        expires_at = datetime.now(UTC) + timedelta(seconds=ttl)
        self.save(
            Session(
                session_hash=hash_secret(session_id),
                csrf_hash=hash_secret(csrf),
                company_id=record.company_id,
                key_id=record.id,
                expires_at=expires_at,
            )
        )
        return SessionStarted(session_id, csrf, record.company_id, expires_at)

    def end_session(self, session_id: str) -> bool:
        """Sign out; False when there was no live session with that id."""
        session_uuid = Session.create_id(hash_secret(session_id))
        record = self._session_on_access(str(session_uuid))
        if record is None or record.expires_at <= datetime.now(UTC):
            return False
        session: Session = self.repository.get(session_uuid)
        if session.end():
            self.save(session)
        return True

    def _session_on_access(self, session_key: str) -> SessionRecord | None:
        """The session with this aggregate id (None: unknown or ended).

        An expired one is dropped from the read model here, and returned this once so that the
        caller can say it expired.
        """
        record = self.sessions.get(session_key)
        if record is not None and record.expires_at <= datetime.now(UTC):
            del self.sessions[session_key]
        return record

    def authenticate_session(self, session_id: str) -> tuple[SessionRecord, KeyRecord]:
        """The live session and the live key behind a session cookie, or ``UnauthenticatedError``."""
        record = self._session_on_access(str(Session.create_id(hash_secret(session_id))))
        if record is None:
            raise UnauthenticatedError("This session is not known or has ended; sign in again.")
        if record.expires_at <= datetime.now(UTC):
            raise UnauthenticatedError("This session has expired; sign in again.")
        key = self.keys_by_id[record.key_id]
        if key.revoked_at is not None:
            raise UnauthenticatedError(
                "The key this session signed in with was revoked; sign in with a live board key."
            )
        return record, key

    @staticmethod
    def csrf_matches(record: SessionRecord, token: str | None) -> bool:
        """Whether ``token`` is the session's CSRF token (compared as hashes, in constant time)."""
        return token is not None and hmac.compare_digest(hash_secret(token), record.csrf_hash)
