"""The store's process recorders: the library's, plus leases and fenced writes.

Each store kind gets the library's process recorder with two additions (the factories below and
:class:`eventstore.postgres_factory.ClipyardPostgresFactory`, whose recorder is in
:mod:`eventstore.pg_recorder`, use them):

- the lease calls of :class:`eventstore.leases.LeaseTable`, over a ``clipyard_leases`` table
  created with the store's own tables (a dictionary for the in-memory store);
- the fence check (:mod:`eventstore.fence`): when the writing context carries a fence, every
  insert of events (with or without tracking) and every insert of tracking alone first checks
  the lease's row in the same transaction, and is refused with nothing written when the lease
  moved on or ran out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.popo import POPOFactory, POPOProcessRecorder
from eventsourcing.sqlite import SQLiteFactory, SQLiteProcessRecorder

from eventstore.fence import active_fence
from eventstore.lease_sql import CREATE_STATEMENT, SqlLeases
from eventstore.leases import LEASE_TABLE, LeaseRecord, MemoryLeases

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eventsourcing.persistence import ProcessRecorder, StoredEvent, Tracking
    from eventsourcing.sqlite import SQLiteCursor, SQLiteDatastore

__all__ = [
    "ClipyardPOPOFactory",
    "ClipyardSQLiteFactory",
    "FencedPOPORecorder",
    "FencedSQLiteRecorder",
    "SqlLeaseCalls",
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


class SqlLeaseCalls(_LeaseCalls):
    """The lease calls over SQL, and the fence check inside a write's transaction."""

    lease_table: SqlLeases

    def _check_fence(self, curs: Any) -> None:
        fence = active_fence()
        if fence is not None:
            self.lease_table.check(curs, fence)


class FencedSQLiteRecorder(SqlLeaseCalls, SQLiteProcessRecorder):
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
