"""What a failed store call means for the client: retry later, or read again and retry.

A request handler's save or load can fail because of the store rather than the request: the
database is unreachable, restarting or failing over (eventsourcing's ``OperationalError`` and
``InterfaceError``, which wrap psycopg's, a pool that found no connection in time, SQLite's
"database is locked"), another replica saved the same aggregate first (``IntegrityError`` on the
aggregate's version), or singleton work whose lease moved on (:class:`eventstore.fence.
StaleFenceError`). None of these is a bug (SQLite's "no such table" or a syntax error is, and
stays a 500): :func:`store_failure` names the answer (503 ``service_unavailable`` "retry", or 409
``state_conflict``) that the bus services (``servicekit``) and the gateway give instead of a 500.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from eventsourcing.persistence import IntegrityError, InterfaceError, OperationalError

from eventstore.fence import StaleFenceError

__all__ = ["StoreFailure", "store_failure"]

UNAVAILABLE = "The store is unreachable or busy right now; nothing was saved. Retry in a moment."
CONFLICT = (
    "It changed while this request was being handled (another request saved it first); "
    "nothing was saved. Read it again and retry."
)
MOVED = "This work moved to another instance of the service; nothing was saved. Retry."


@dataclass(frozen=True)
class StoreFailure:
    """The answer to give for a store failure."""

    code: str
    status: int
    message: str


def store_failure(exc: BaseException) -> StoreFailure | None:
    """The answer for ``exc`` when it is a failure of the store, else None."""
    if isinstance(exc, StaleFenceError):
        return StoreFailure("service_unavailable", 503, MOVED)
    if isinstance(exc, IntegrityError):
        return StoreFailure("state_conflict", 409, CONFLICT)
    if isinstance(exc, InterfaceError) or (
        isinstance(exc, OperationalError | sqlite3.OperationalError) and _transient(exc)
    ):
        return StoreFailure("service_unavailable", 503, UNAVAILABLE)
    return None


_SQLITE_TRANSIENT = frozenset({5, 6, 10, 13, 14})
"""SQLite's BUSY, LOCKED, IOERR, FULL and CANTOPEN: the database's state, not the statement."""


def _transient(exc: BaseException) -> bool:
    """Whether an operational error is the database's state (unreachable, busy, failing over)
    rather than a bug (a bad statement, a missing table): only SQLite says which."""
    cause = exc if isinstance(exc, sqlite3.Error) else exc.__cause__
    if isinstance(cause, sqlite3.Error):
        code = getattr(cause, "sqlite_errorcode", None)
        return code is None or (code & 0xFF) in _SQLITE_TRANSIENT
    return True
