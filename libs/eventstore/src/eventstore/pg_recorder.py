"""The PostgreSQL store's process recorder: the library's, on the store's own channel
(:mod:`eventstore.pg_listen`), with leases and fenced writes (:mod:`eventstore.recorders` says
what they add), saves in one statement when they can (:mod:`eventstore.pg_insert`), and calls
that give up within seconds while the database cannot be reached.

A module of its own so that a SQLite or in-memory store never imports psycopg."""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from eventsourcing.persistence import (
    InterfaceError,
    OperationalError,
    PersistenceError,
    ProgrammingError,
)
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresTrackingRecorder,
)

from eventstore.fence import active_fence
from eventstore.lease_sql import SqlLeases
from eventstore.pg_insert import FUNCTION, call_statement, create_statement, insert_at_once
from eventstore.pg_listen import StoreChannelRecorder
from eventstore.recorders import SqlLeaseCalls

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventsourcing.persistence import StoredEvent, Tracking
    from eventsourcing.postgres import PostgresDatastore
    from psycopg import Cursor
    from psycopg.rows import DictRow

T = TypeVar("T")

log = logging.getLogger(__name__)

__all__ = ["STORE_ATTEMPTS", "STORE_PATIENCE", "FencedPostgresRecorder"]


STORE_ATTEMPTS = 3
"""Tries of a PostgreSQL call while the database cannot be reached. The library tries ten times,
each waiting for its pool: half a minute per call, and the store's one thread (requests,
follower, relay) queues behind it, so a request learned that the store was down after 30 to 45 s.
Three answer within seconds and still ride out a failover's blip."""

STORE_PATIENCE = 6.0
"""Seconds after which a failed call is not tried again: an attempt may wait for the pool's
connection (``POSTGRES_CONNECT_TIMEOUT``, 5 s a host), so three such waits took 15 to 21 s; a
call now gives up within about two of them."""

_RETRY_WAIT = 0.2


def _patient(once: Callable[..., T]) -> Callable[..., T]:
    """``once`` tried at most :data:`STORE_ATTEMPTS` times while the database cannot be reached,
    and not again once :data:`STORE_PATIENCE` seconds have passed."""

    @functools.wraps(once)
    def tried(*args: Any, **kwargs: Any) -> T:
        deadline = time.monotonic() + STORE_PATIENCE
        attempt = 1
        while True:
            try:
                return once(*args, **kwargs)
            except (InterfaceError, OperationalError):
                late = time.monotonic() + _RETRY_WAIT >= deadline
                if attempt >= STORE_ATTEMPTS or late:
                    raise
            attempt += 1
            time.sleep(_RETRY_WAIT)

    return tried


def _fewer_tries(method: Callable[..., T]) -> Callable[..., T]:
    """The library's ``method`` without its ten tries, :func:`_patient` instead."""
    return _patient(method.__wrapped__)  # type: ignore[attr-defined]


class FencedPostgresRecorder(SqlLeaseCalls, StoreChannelRecorder):
    """PostgreSQL: the library's process recorder on the store's own channel, fenced."""

    def __init__(self, datastore: PostgresDatastore, **tables: str) -> None:
        super().__init__(datastore, **tables)
        self.lease_table = SqlLeases("postgres", datastore.transaction, datastore.schema)
        self._call_insert = call_statement(self)
        self._one_statement = False
        """Whether this process created :mod:`eventstore.pg_insert`'s function (with the
        tables): until then every save takes the library's path."""

    def create_table(self) -> None:
        """The library's tables, then the leases', one replica at a time: two replicas starting
        together on an empty schema both ran ``CREATE TABLE IF NOT EXISTS`` and one failed on
        PostgreSQL's catalogue (``pg_type_typname_nsp_index``). A session advisory lock named
        after the schema, held on a connection of its own, makes the others wait and then find
        the tables there."""
        key = f"clipyard-create-tables:{self.datastore.schema}"
        with self.datastore.get_connection() as conn:
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
            conn.commit()
            try:
                super().create_table()
                with contextlib.suppress(
                    psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable
                ):
                    self.lease_table.create()
                self._one_statement = self._create_insert_function()
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))
                conn.commit()

    def _create_insert_function(self) -> bool:
        """Create :mod:`eventstore.pg_insert`'s function; False (logged) when the store's role
        may not: saves then take the library's path."""
        try:
            with self.datastore.transaction(commit=True) as curs:
                curs.execute(create_statement(self))
        except PersistenceError as error:
            log.warning("saves take the library's transaction: %s", error)
            return False
        return True

    _insert_pipelined = _fewer_tries(PostgresApplicationRecorder.insert_events)
    _insert_at_once = _patient(insert_at_once)

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """A save that is neither fenced nor tracked: one call of :mod:`eventstore.pg_insert`'s
        function; any other: the library's pipelined transaction, fence checked first."""
        simple = kwargs.get("tracking") is None and active_fence() is None
        ids: Sequence[int] | None = None
        if simple and stored_events and self._one_statement:
            try:
                ids = self._insert_at_once(self._call_insert, stored_events)
            except ProgrammingError as error:  # the function was dropped (a restore): nothing saved
                if FUNCTION not in str(error):
                    raise
                log.warning("the store's insert function is gone; saves take the transaction")
                self._one_statement = False
        if ids is None:
            ids = self._insert_pipelined(stored_events, **kwargs)
        return ids

    select_events = _fewer_tries(PostgresAggregateRecorder.select_events)
    select_notifications = _fewer_tries(PostgresApplicationRecorder.select_notifications)
    max_notification_id = _fewer_tries(PostgresApplicationRecorder.max_notification_id)
    max_tracking_id = _fewer_tries(PostgresTrackingRecorder.max_tracking_id)
    has_tracking_id = _fewer_tries(PostgresTrackingRecorder.has_tracking_id)

    def _insert_events(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> None:
        self._check_fence(curs)
        super()._insert_events(curs, stored_events, **kwargs)

    def insert_tracking(self, tracking: Tracking) -> None:
        """Record ``tracking`` alone, fenced like events."""
        with self.datastore.transaction(commit=True) as curs:
            self._check_fence(curs)
            self._insert_tracking(curs, tracking)
