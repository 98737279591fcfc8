"""PostgreSQL wake-ups of the store follower: the store's own NOTIFY channel and its listener.

eventsourcing's PostgreSQL recorder issues ``NOTIFY <channel>`` in the transaction of every insert
of events (after its ``LOCK TABLE``), so the notification reaches listeners exactly when the events
are committed, and never for a save that rolled back. The library names the channel after the
events table alone (``store_events``), which every service's schema shares when several services
use one database: :class:`StoreChannelRecorder` names it after the schema too
(``clipyard_gateway_store_events``, :func:`store_channel`), so a service wakes only for its own
store. (The library's optional database function, ``POSTGRES_ENABLE_DB_FUNCTIONS``, which Clipyard
does not enable, would still notify the old name: followers would then wake by polling only.)

:class:`StoreListener` holds one dedicated connection (outside the store's pool, on the event loop
with psycopg's async API) that ``LISTEN``s on the channel and calls ``wake()`` for each
notification. A dropped connection (the server restarted or failed over, the backend was
terminated) is reconnected with backoff (0.1 s doubling up to ``max_backoff``), and ``wake()`` is
called on every (re)connection, since notifications sent meanwhile are lost. A quiet connection is
checked with ``SELECT 1`` every ``check_interval`` seconds, so a silently dead one is found too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import psycopg
from eventsourcing.postgres import PostgresDatastore, PostgresProcessRecorder
from psycopg import sql

__all__ = ["StoreChannelRecorder", "StoreListener", "store_channel"]

logger = logging.getLogger(__name__)


def store_channel(schema: str, events_table: str) -> str:
    """The NOTIFY channel of one application's store: ``<schema>_<events table>``.

    Args:
        schema: The store's schema (``clipyard_gateway``).
        events_table: Its events table (``store_events``).

    Returns:
        The channel name (an identifier: quote it with :class:`psycopg.sql.Identifier`).
    """
    return f"{schema}_{events_table}".replace(".", "_")


class StoreChannelRecorder(PostgresProcessRecorder):
    """The library's process recorder, notifying a channel named after the schema and table."""

    def __init__(
        self,
        datastore: PostgresDatastore,
        *,
        events_table_name: str = "stored_events",
        tracking_table_name: str = "notification_tracking",
    ) -> None:
        """Build the library's recorder, then name its channel (:func:`store_channel`)."""
        super().__init__(
            datastore,
            events_table_name=events_table_name,
            tracking_table_name=tracking_table_name,
        )
        self.channel_name = store_channel(datastore.schema, events_table_name)


def _backoff(attempt: int, ceiling: float) -> float:
    return float(min(ceiling, 0.1 * 2 ** min(attempt - 1, 16)))


class StoreListener:
    """LISTENs on a store's channel on a dedicated connection; reconnects when it drops."""

    def __init__(
        self,
        recorder: PostgresProcessRecorder,
        wake: Callable[[], None],
        *,
        service: str | None = None,
        max_backoff: float = 5.0,
        check_interval: float = 10.0,
    ) -> None:
        """Describe the listener; :meth:`run` connects and listens until stopped.

        Args:
            recorder: The application's PostgreSQL recorder (its channel and connection settings).
            wake: Called (on the event loop) for each notification and each (re)connection.
            service: For logs.
            max_backoff: Longest pause between reconnection attempts (seconds).
            check_interval: Seconds without a notification after which the connection is checked.
        """
        self.channel = recorder.channel_name
        self.service = service
        self._datastore = recorder.datastore
        self._wake = wake
        self._max_backoff = max_backoff
        self._check_interval = check_interval
        self.connected = False
        self.backend_pid: int | None = None
        """The listening backend's pid (``pg_stat_activity``), None while disconnected."""
        self.connects = 0
        """Successful connections so far (more than 1: it reconnected)."""
        self.drops = 0
        """Connections lost or refused so far."""
        self.notifications = 0
        """NOTIFY messages received."""

    def _connect_args(self) -> tuple[str, dict[str, Any]]:
        """The pool's conninfo and keyword arguments: the listener connects like the store."""
        pool = self._datastore.pool
        conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
        given = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
        kwargs = {k: v for k, v in (given or {}).items() if k != "row_factory"}
        get_password = getattr(pool, "get_password_func", None)
        if get_password is not None:
            kwargs["password"] = get_password()
        return conninfo, kwargs

    async def run(self, stopping: asyncio.Event) -> None:
        """Listen until ``stopping`` is set (or the task is cancelled), reconnecting as needed."""
        failures = 0
        lost_at: float | None = None
        while not stopping.is_set():
            try:
                conninfo, kwargs = self._connect_args()
                conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True, **kwargs)
                async with conn:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self._up(conn, lost_at)
                    failures, lost_at = 0, None
                    self._wake()  # whatever was committed while nobody listened
                    await self._listen(conn, stopping)
            except Exception as error:  # psycopg.Error, OSError, a timed-out check...
                failures += 1
                lost_at = lost_at or time.monotonic()
                self._down(error, failures)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), _backoff(failures, self._max_backoff))
            finally:
                self.connected = False
                self.backend_pid = None

    async def _listen(self, conn: psycopg.AsyncConnection[Any], stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            async for _ in conn.notifies(timeout=self._check_interval):
                self.notifications += 1
                self._wake()
            # Quiet for a while: make sure the connection still answers.
            await asyncio.wait_for(conn.execute("SELECT 1"), self._check_interval)

    def _up(self, conn: psycopg.AsyncConnection[Any], lost_at: float | None) -> None:
        self.connected = True
        self.backend_pid = conn.info.backend_pid
        self.connects += 1
        fields: dict[str, object] = {"service": self.service, "channel": self.channel}
        if lost_at is None and self.connects == 1:
            logger.info("store listener listening", extra=fields)
            return
        if lost_at is not None:
            fields["down_ms"] = round((time.monotonic() - lost_at) * 1000)
        logger.info("store listener listening again", extra={**fields, "drops": self.drops})

    def _down(self, error: BaseException, failures: int) -> None:
        self.drops += 1
        if failures == 1 or failures % 20 == 0:
            logger.warning(
                "store listener disconnected; the follower polls until it reconnects",
                extra={
                    "service": self.service,
                    "channel": self.channel,
                    "attempt": failures,
                    "error": f"{type(error).__name__}: {error}".strip(),
                },
            )
