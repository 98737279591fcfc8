"""The store follower: a replica's read models follow the whole store, not only its own saves.

Several instances of one service (replicas) share one store. Each projects its own saves into its
read models when it saves them (:class:`~eventstore.application.ServiceApplication`); the follower
projects the rest, what the other instances saved, by following the store's notification log:
:meth:`ServiceApplication.follow_store` reads the notifications after ``projected_upto`` and
projects them in id order, under the lock every projection takes, so a notification is projected
exactly once whichever path meets it first, and none is skipped.

It reads on the store's thread (:class:`~eventstore.executor.StoreExecutor`), like every store
call, one batch per call so that requests run in between, and reads again at once while batches
come back full. What wakes it:

- PostgreSQL: a ``NOTIFY`` on the store's channel, sent in the transaction of each insert
  (:mod:`eventstore.pg_listen`: a dedicated listening connection, reconnected with backoff), and a
  poll every ``poll_interval`` (0.5 s) as a fallback, every 0.2 s while the listener is down: a
  lost notification never delays a replica by more than that;
- SQLite: a poll every 0.2 s (one indexed query when nothing is new);
- in memory: nothing (the store is the process's own), the follower does not run.

It logs when it starts and stops, when the listener drops or comes back, when reading fails, and
its progress at most once every ``progress_interval`` seconds, never per event;
:attr:`StoreFollower.followed` counts the notifications it projected, and a failed projection
counts in the application's ``projection_failures`` like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from typing import TYPE_CHECKING, Final, Literal

from eventsourcing.popo import POPOApplicationRecorder

if TYPE_CHECKING:
    from eventsourcing.persistence import Recorder

    from eventstore.application import ServiceApplication
    from eventstore.executor import StoreExecutor
    from eventstore.pg_listen import StoreListener

__all__ = [
    "LISTEN_POLL_INTERVAL",
    "POLL_INTERVAL",
    "FollowMode",
    "StoreFollower",
    "follow_all",
    "follow_mode",
]

logger = logging.getLogger(__name__)

FollowMode = Literal["none", "poll", "listen"]

POLL_INTERVAL: Final = 0.2
"""Seconds between reads of the log when nothing wakes the follower (SQLite, listener down)."""

LISTEN_POLL_INTERVAL: Final = 0.5
"""Seconds between fallback reads while the PostgreSQL listener is connected."""


def follow_all(app: ServiceApplication) -> None:
    """Project every notification the store holds that ``app`` has not projected yet, batch after
    batch, on the calling thread (the store's): what any instance committed before the call is
    then in ``app``'s read models. For a decision that must not miss another replica's save."""
    while app.follow_store() >= app.projection_batch_size:
        pass


def follow_mode(app: ServiceApplication) -> FollowMode:
    """How ``app``'s store can be followed: ``listen`` (PostgreSQL), ``poll`` or ``none``."""
    recorder = app.recorder
    if isinstance(recorder, POPOApplicationRecorder):
        return "none"
    if _on_postgres(recorder):
        return "listen"
    return "poll"


def _on_postgres(recorder: Recorder) -> bool:
    """Whether ``recorder`` writes to PostgreSQL. The library's PostgreSQL module (and psycopg)
    is imported only by a PostgreSQL store, so no other store pays for importing it."""
    postgres = sys.modules.get("eventsourcing.postgres")
    return postgres is not None and isinstance(recorder, postgres.PostgresProcessRecorder)


class StoreFollower:
    """Projects into one instance's read models what the other instances save."""

    def __init__(
        self,
        app: ServiceApplication,
        executor: StoreExecutor,
        *,
        mode: FollowMode | None = None,
        poll_interval: float | None = None,
        batch_size: int | None = None,
        max_backoff: float = 5.0,
        progress_interval: float = 60.0,
    ) -> None:
        """Describe the follower; :meth:`start` starts following.

        Args:
            app: The instance whose read models follow the store.
            executor: The store's thread (every read and projection runs there).
            mode: ``listen``, ``poll`` or ``none`` (default: :func:`follow_mode`; ``listen``
                needs PostgreSQL).
            poll_interval: Seconds between reads when nothing wakes it (default
                :data:`LISTEN_POLL_INTERVAL` when listening, else :data:`POLL_INTERVAL`).
            batch_size: Notifications read per store call (default the application's
                ``projection_batch_size``).
            max_backoff: Longest pause after a failed read, and between reconnections.
            progress_interval: Seconds between progress lines in the log, at most.
        """
        self.app = app
        self.mode: FollowMode = mode or follow_mode(app)
        if self.mode == "listen" and not _on_postgres(app.recorder):
            raise ValueError("only a PostgreSQL store can be followed by LISTEN/NOTIFY")
        self.poll_interval = poll_interval or (
            LISTEN_POLL_INTERVAL if self.mode == "listen" else POLL_INTERVAL
        )
        self._executor = executor
        self._batch_size = batch_size or app.projection_batch_size
        self._max_backoff = max_backoff
        self._progress_interval = progress_interval
        self.followed = 0
        """Notifications this follower projected (others' saves, or own ones it met first)."""
        self.listener: StoreListener | None = None
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._listening: asyncio.Task[None] | None = None
        self._reported = (0, time.monotonic())

    @property
    def running(self) -> bool:
        """True while it follows the store."""
        return any(not task.done() for task in self._tasks)

    def wake(self) -> None:
        """Read the log now (call on the event loop)."""
        self._wake.set()

    async def start(self) -> None:
        """Start following (nothing to do for an in-memory store)."""
        if self._tasks:
            raise RuntimeError(f"store follower of {self.app.service} already started")
        fields: dict[str, object] = {"service": self.app.service, "mode": self.mode}
        if self.mode == "none":
            logger.debug("store follower not needed (in-memory store)", extra=fields)
            return
        self._stopping.clear()
        name = self.app.service or self.app.name
        self._tasks.append(asyncio.create_task(self._run(), name=f"store-follower:{name}"))
        if self.mode == "listen":
            from eventsourcing.postgres import PostgresProcessRecorder

            from eventstore.pg_listen import StoreListener

            assert isinstance(self.app.recorder, PostgresProcessRecorder)
            self.listener = StoreListener(
                self.app.recorder,
                self.wake,
                service=self.app.service,
                max_backoff=self._max_backoff,
            )
            fields["channel"] = self.listener.channel
            run = self.listener.run(self._stopping)
            self._listening = asyncio.create_task(run, name=f"store-listener:{name}")
            self._tasks.append(self._listening)
        logger.info(
            "store follower started",
            extra={
                **fields,
                "poll_s": self.poll_interval,
                "projected_upto": self.app.projected_upto,
            },
        )

    async def stop(self, timeout: float = 1.0) -> None:
        """Stop following; a read in progress finishes on the store thread.

        Args:
            timeout: Seconds to wait for the loop to end before it is cancelled.
        """
        tasks, self._tasks = self._tasks, []
        if not tasks:
            return
        self._stopping.set()
        self._wake.set()
        if self._listening is not None:
            self._listening.cancel()  # it only waits for notifications: nothing to finish
            self._listening = None
        _, pending = await asyncio.wait(tasks, timeout=max(0.05, timeout))
        for task in pending:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        logger.info(
            "store follower stopped",
            extra={
                "service": self.app.service,
                "followed": self.followed,
                "projected_upto": self.app.projected_upto,
            },
        )

    async def __aenter__(self) -> StoreFollower:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- the loop ------------------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            self._wake.clear()
            if self._executor.closed:
                return
            try:
                count = await self._executor.run(self.app.follow_store, self._batch_size)
            except Exception as error:
                if self._executor.closed:
                    return
                failures += 1
                self._read_failed(error, failures)
                await self._pause(min(self._max_backoff, 0.1 * 2 ** min(failures - 1, 16)))
                continue
            if failures:
                logger.info(
                    "store follower reads the store again",
                    extra={"service": self.app.service, "failures": failures},
                )
                failures = 0
            self.followed += count
            self._progress()
            if count < self._batch_size:  # a full batch: more may wait, read on at once
                await self._pause(self._interval(), wakeable=True)

    def _interval(self) -> float:
        listener = self.listener
        if listener is not None and not listener.connected:
            return min(self.poll_interval, POLL_INTERVAL)
        return self.poll_interval

    async def _pause(self, seconds: float, *, wakeable: bool = False) -> None:
        waiting = self._wake.wait() if wakeable else self._stopping.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiting, seconds)

    def _read_failed(self, error: Exception, failures: int) -> None:
        if failures == 1 or failures % 50 == 0:
            logger.log(
                logging.WARNING if failures < 5 else logging.ERROR,
                "store follower: reading the store failed; retrying",
                exc_info=error,
                extra={"service": self.app.service, "attempt": failures},
            )

    def _progress(self) -> None:
        followed, at = self._reported
        now = time.monotonic()
        if self.followed == followed or now - at < self._progress_interval:
            return
        self._reported = (self.followed, now)
        listener = self.listener
        logger.info(
            "store follower progress",
            extra={
                "service": self.app.service,
                "followed": self.followed,
                "since_last": self.followed - followed,
                "projected_upto": self.app.projected_upto,
                "projection_failures": self.app.projection_failures,
                "listener_drops": listener.drops if listener is not None else 0,
            },
        )
