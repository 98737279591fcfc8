"""An operator-page session (private: never published), its id derived from the hashed secret.

Pure: no I/O; the session id and CSRF token are never stored in the clear, only their hashes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final
from uuid import UUID, uuid5

from eventsourcing.domain import event

from eventstore import ClipyardAggregate

__all__ = ["Session"]

_SESSION_NAMESPACE: Final = UUID("6f1c3a52-8f0e-5b8e-9d55-3f3c2b6a9e10")


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
