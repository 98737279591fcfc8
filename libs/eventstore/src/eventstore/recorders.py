"""The store's process recorders: the library's, plus leases and fenced writes.

Each store kind gets the library's process recorder with two additions (the factories below and
:class:`eventstore.postgres_factory.ClipyardPostgresFactory` use them):

- the lease calls of :class:`eventstore.leases.LeaseTable`, over a ``clipyard_leases`` table
  created with the store's own tables (a dictionary for the in-memory store);
- the fence check (:mod:`eventstore.fence`): when the writing context carries a fence, every
  insert of events (with or without tracking) and every insert of tracking alone first checks
  the lease's row in the same transaction, and is refused with nothing written when the lease
  moved on or ran out.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from eventsourcing.persistence import (
    InterfaceError,
    OperationalError,
    PersistenceError,
    ProgrammingError,
)
from eventsourcing.popo import POPOFactory, POPOProcessRecorder
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresTrackingRecorder,
)
from eventsourcing.sqlite import SQLiteFactory, SQLiteProcessRecorder
from eventsourcing.utils import retry

from eventstore.fence import active_fence
from eventstore.lease_sql import CREATE_STATEMENT, SqlLeases
from eventstore.leases import LEASE_TABLE, LeaseRecord, MemoryLeases
from eventstore.pg_insert import FUNCTION, call_statement, create_statement, insert_at_once
from eventstore.pg_listen import StoreChannelRecorder

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventsourcing.persistence import ProcessRecorder, StoredEvent, Tracking
    from eventsourcing.postgres import PostgresDatastore
    from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore
    from psycopg import Cursor
    from psycopg.rows import DictRow

T = TypeVar("T")

log = logging.getLogger(__name__)

__all__ = [
    "ClipyardPOPOFactory",
    "ClipyardSQLiteFactory",
    "FencedPOPORecorder",
    "FencedPostgresRecorder",
    "FencedSQLiteRecorder",
]


class _LeaseCalls:
    """The lease calls of :class:`eventstore.leases.LeaseTable`, handed to ``lease_table``."""

    lease_table: SqlLeases | MemoryLeases

    def acquire_lease(self, name: str, holder: str, ttl_ms: int) -> int | None:
        """See :meth:`eventstore.leases.LeaseTable.acquire_lease`."""
        return self.lease_table.acquire_lease(name, holder, ttl_ms)

    def renew_lease(self, name: str, holder: str, token: int, ttl_ms: int) -> bool:
        """See :meth:`eventstore.leases.LeaseTable.renew_lease`."""
        return self.lease_table.renew_lease(name, holder, token, ttl_ms)

    def take_over_lease(self, name: str, holder: str, ttl_ms: int, from_token: int) -> int | None:
        """See :meth:`eventstore.leases.LeaseTable.take_over_lease`."""
        return self.lease_table.take_over_lease(name, holder, ttl_ms, from_token)

    def release_lease(self, name: str, holder: str, token: int) -> bool:
        """See :meth:`eventstore.leases.LeaseTable.release_lease`."""
        return self.lease_table.release_lease(name, holder, token)

    def leases(self) -> list[LeaseRecord]:
        """See :meth:`eventstore.leases.LeaseTable.leases`."""
        return self.lease_table.leases()


class _SqlLeaseCalls(_LeaseCalls):
    """The lease calls over SQL, and the fence check inside a write's transaction."""

    lease_table: SqlLeases

    def _check_fence(self, curs: Any) -> None:
        fence = active_fence()
        if fence is not None:
            self.lease_table.check(curs, fence)


STORE_ATTEMPTS = 3
"""Tries of a PostgreSQL call while the database cannot be reached. The library tries ten times,
each waiting for its pool: half a minute per call, and the store's one thread (requests,
follower, relay) queues behind it, so a request learned that the store was down after 30 to 45 s.
Three answer within seconds and still ride out a failover's blip."""


def _fewer_tries(method: Callable[..., T]) -> Callable[..., T]:
    """The library's ``method`` without its ten tries, tried :data:`STORE_ATTEMPTS` times."""
    once = method.__wrapped__  # type: ignore[attr-defined]
    tried: Callable[..., T] = retry(
        (InterfaceError, OperationalError), max_attempts=STORE_ATTEMPTS, wait=0.2
    )(once)
    return tried


class FencedPostgresRecorder(_SqlLeaseCalls, StoreChannelRecorder):
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
    _insert_at_once = retry(
        (InterfaceError, OperationalError), max_attempts=STORE_ATTEMPTS, wait=0.2
    )(insert_at_once)

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


class FencedSQLiteRecorder(_SqlLeaseCalls, SQLiteProcessRecorder):
    """SQLite: the library's process recorder, fenced (the file's one writer lock serialises)."""

    def __init__(self, datastore: SQLiteDatastore, **tables: str) -> None:
        super().__init__(datastore, **tables)
        self.lease_table = SqlLeases("sqlite", datastore.transaction)

    def construct_create_table_statements(self) -> list[str]:
        """The library's tables and the leases'."""
        return [
            *super().construct_create_table_statements(),
            CREATE_STATEMENT.format(t=LEASE_TABLE),
        ]

    # The check comes after the inserts, in the same transaction: the inserts take the file's
    # write lock first. Read first, a deferred transaction's upgrade to writing fails at once
    # ("database is locked") when another process committed in between.

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        self._check_fence(c)
        return ids

    def insert_tracking(self, tracking: Tracking) -> None:
        """Record ``tracking`` alone, fenced like events."""
        with self.datastore.transaction(commit=True) as c:
            self._insert_tracking(c, tracking)
            self._check_fence(c)


class FencedPOPORecorder(_LeaseCalls, POPOProcessRecorder):
    """The in-memory store: the library's process recorder with in-memory leases, fenced."""

    lease_table: MemoryLeases

    def __init__(self) -> None:
        super().__init__()
        self.lease_table = MemoryLeases()

    def _check_fence(self) -> None:
        fence = active_fence()
        if fence is not None:
            self.lease_table.check(fence)

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """Insert ``stored_events`` (and tracking), fenced."""
        with self._database_lock:
            self._check_fence()
            return super().insert_events(stored_events, **kwargs)

    def insert_tracking(self, tracking: Tracking) -> None:
        """Record ``tracking`` alone, fenced like events."""
        with self._database_lock:
            self._check_fence()
            super().insert_tracking(tracking)


class ClipyardSQLiteFactory(SQLiteFactory):
    """The library's SQLite factory, its process recorder fenced and holding leases."""

    process_recorder_class = FencedSQLiteRecorder


class ClipyardPOPOFactory(POPOFactory):
    """The library's in-memory factory, its process recorder fenced and holding leases."""

    def process_recorder(self) -> ProcessRecorder:
        """A fenced in-memory process recorder."""
        return FencedPOPORecorder()
