"""What a failed store call means for the client: retry later, or read again and retry.

A request handler's save or load can fail because of the store rather than the request: the
database is unreachable, restarting or failing over (eventsourcing's ``OperationalError`` and
``InterfaceError``, which wrap psycopg's, a pool that found no connection in time, SQLite's
"database is locked"), another replica saved the same aggregate first (``IntegrityError`` on the
aggregate's version), or singleton work whose lease moved on (:class:`eventstore.fence.
StaleFenceError`). None of these is a bug, and nothing was saved: :func:`store_failure` names the
answer (503 ``service_unavailable`` "retry", or 409 ``state_conflict``) that the bus services
(``servicekit``) and the gateway give instead of a 500.
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
    if isinstance(exc, OperationalError | InterfaceError | sqlite3.OperationalError):
        return StoreFailure("service_unavailable", 503, UNAVAILABLE)
    return None
