"""Store failures are answers a client can act on, never a 500 (eventstore.store_errors)."""

from __future__ import annotations

import sqlite3

import pytest
from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
)

from eventstore.fence import Fence, StaleFenceError
from eventstore.store_errors import store_failure


def _sqlite_error(message: str, code: int) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    ("error", "code", "status", "says"),
    [
        (OperationalError("connection refused"), "service_unavailable", 503, "Retry"),
        (InterfaceError("connection closed"), "service_unavailable", 503, "Retry"),
        (_sqlite_error("database is locked", 5), "service_unavailable", 503, "Retry"),
        (IntegrityError("duplicate key"), "state_conflict", 409, "Read it again"),
        (StaleFenceError(Fence("singleton", "a", 1), "x"), "service_unavailable", 503, "Retry"),
    ],
)
def test_store_failures_are_retry_or_conflict(
    error: Exception, code: str, status: int, says: str
) -> None:
    failure = store_failure(error)
    assert failure is not None
    assert (failure.code, failure.status) == (code, status)
    assert says in failure.message


def test_anything_else_is_not_the_stores() -> None:
    assert store_failure(ProgrammingError("syntax error")) is None
    assert store_failure(ValueError("bad")) is None
    # A bug in SQL stays a 500, raw or wrapped by the library.
    assert store_failure(_sqlite_error("no such table: store_events", 1)) is None
    wrapped = OperationalError("no such column: x")
    wrapped.__cause__ = _sqlite_error("no such column: x", 1)
    assert store_failure(wrapped) is None
