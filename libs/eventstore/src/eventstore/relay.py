"""The outbox relay: publishes a service's public events from its notification log to JetStream.

The relay follows the application's notification log from a durable position (a tracking row
named :data:`OUTBOX_TRACKING`, in the store itself). Each stored event is mapped by the service's
``to_contract`` (None: private, never published, the position still advances) and published, in
notification order, to ``contracts.subjects.event_subject(type, service)`` with

- ``Nats-Msg-Id: <service>:<notification id>`` (JetStream drops what it already holds),
- ``Clipyard-Notification-Id`` and ``Clipyard-Origin`` (``<aggregate id>:<version>``),
- the trace context stored in the event (the PRODUCER span continues that trace).

Each publish awaits the stream's ack; a transient failure (NATS unreachable, no ack in time) is
retried with backoff, never skipped, so order holds; when the stream itself is gone the relay
creates it again (:func:`natsbus.jetstream.ensure_event_stream`, with the settings it was given).
A deterministic failure (the mapping or the encoding fails, the message is over the bus limit: see
:mod:`eventstore.publication`) can never succeed: the event is recorded as a private
``OutboxSkips.PublicationSkipped`` (with the position, in one transaction), logged at ERROR, and
the relay goes on. The relay also installs the same check as the application's
``publication_check``, so such events are normally refused before they are saved.
The position is recorded after each batch; :attr:`OutboxRelay.lag` tells how far behind it is.
A crash between append and publish loses nothing; one between publish and record republishes,
which the stream de-duplicates and which the relay avoids anyway by starting after the last
message of its service already in the stream.

The parts: :mod:`eventstore.relay_position` (handled, recorded and latest notification ids),
:mod:`eventstore.relay_publish` (one notification, published until acked) and
:mod:`eventstore.relay_recovery` (backoff, a deleted stream, an event that can never go).

At start the relay refuses (:class:`RelayRefusedError`) when the stream holds a message of its
service beyond the store's last notification, or one whose origin is not the store's event of that
id: the store was wiped or replaced under a live stream, and publishing would reuse ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from eventstore.publication import OUTBOX_POSITION, check_publishable
from eventstore.relay_position import RelayPosition
from eventstore.relay_publish import NotificationPublisher, Outgoing, StreamSettings
from eventstore.relay_recovery import Pacing
from eventstore.streamcheck import (
    NOTIFICATION_ID_HEADER,
    ORIGIN_HEADER,
    RelayRefusedError,
    check_stream_against_store,
)
from natsbus.jetstream import DEFAULT_DUPLICATE_WINDOW, DEFAULT_MAX_AGE

if TYPE_CHECKING:
    from nats.js.client import JetStreamContext

    from contracts.base import Event
    from contracts.subjects import ServiceToken
    from eventstore.application import ServiceApplication
    from eventstore.executor import StoreExecutor

__all__ = [
    "NOTIFICATION_ID_HEADER",
    "ORIGIN_HEADER",
    "OUTBOX_TRACKING",
    "OutboxRelay",
    "RelayRefusedError",
    "ToContract",
]

logger = logging.getLogger(__name__)

OUTBOX_TRACKING: Final = OUTBOX_POSITION
"""The tracking name under which the relay records its position (never a service token)."""

ToContract = Callable[[Any], "Event | None"]
"""Maps a stored domain event to its public contract, or None for a private event."""


class OutboxRelay:
    """Publishes every public event of one service's store, in order, exactly once per id."""

    def __init__(
        self,
        app: ServiceApplication,
        js: JetStreamContext,
        *,
        service: ServiceToken,
        to_contract: ToContract,
        executor: StoreExecutor,
        poll_interval: float = 0.5,
        batch_size: int = 100,
        publish_timeout: float = 5.0,
        max_backoff: float = 5.0,
        start_from: int | None = None,
        duplicate_window: float = DEFAULT_DUPLICATE_WINDOW,
        max_age: float = DEFAULT_MAX_AGE,
        replicas: int = 1,
    ) -> None:
        """Describe the relay; :meth:`start` checks the stream and starts publishing.

        Args:
            app: The service's application (its store and notification log).
            js: The JetStream context.
            service: The service token (subjects and message ids).
            to_contract: Maps a stored event to its contract, None for a private one.
            executor: The store's thread.
            poll_interval: Seconds between reads of the log when no save woke the relay.
            batch_size: Notifications read (and the position recorded) per round.
            publish_timeout: Seconds to wait for each ack.
            max_backoff: Longest pause between retries of a failed publish.
            start_from: Republish after this notification id instead of the recorded position
                (the stream de-duplicates within its window).
            duplicate_window: The event stream's de-duplication window (seconds), used when the
                relay has to create the stream again; pass what the service started it with.
            max_age: The event stream's retention (seconds), likewise.
            replicas: The event stream's replicas, likewise.
        """
        self.app = app
        self.service = service
        self._js = js
        self._to_contract = to_contract
        self._executor = executor
        self._poll_interval = poll_interval
        self._batch_size = batch_size
        self._start_from = start_from
        self._at = RelayPosition(app, executor, service)
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._pacing = Pacing(max_backoff, self._stopping)
        self._publisher = NotificationPublisher(
            app,
            js,
            executor,
            service=service,
            to_contract=to_contract,
            publish_timeout=publish_timeout,
            stream=StreamSettings(
                duplicate_window=duplicate_window, max_age=max_age, replicas=replicas
            ),
            pacing=self._pacing,
            position=self._at,
        )

    @property
    def position(self) -> int:
        """The last notification id handled (published or private) in this process."""
        return self._at.handled

    @property
    def recorded_position(self) -> int:
        """The last position recorded durably in the store."""
        return self._at.recorded

    @property
    def skipped(self) -> int:
        """Notifications skipped in this process because they can never be published."""
        return self._publisher.skipped

    @property
    def lag(self) -> int:
        """How many notifications are saved but not handled yet (last notification - position).

        Cheap (no store access): the last notification id is the one the latest save reported.
        """
        return self._at.lag

    def check_publishable(self, domain_event: Any) -> None:
        """Raise unless this relay can publish ``domain_event`` (the save-boundary check).

        Installed as the application's ``publication_check`` by :meth:`start`.

        Args:
            domain_event: A pending event about to be saved.

        Raises:
            eventstore.publication.UnpublishableEventError: It could never be published.
        """
        check_publishable(self._to_contract, domain_event, service=self.service)

    async def start(self) -> None:
        """Check the stream against the store, then follow the notification log.

        Raises:
            RelayRefusedError: The stream holds this service's messages the store does not.
        """
        if self._task is not None:
            raise RuntimeError(f"outbox relay of {self.service} already started")
        await self._at.load()
        published = await check_stream_against_store(
            self._js, self.app, self._executor, self.service
        )
        if self._start_from is not None:
            self._at.handled = self._start_from
        else:
            self._at.handled = max(self._at.recorded, published or 0)
            await self._at.record()
        self._loop = asyncio.get_running_loop()
        self._stopping.clear()
        self.app.on_saved.append(self._on_saved)
        self.app.publication_check = self.check_publishable
        self._task = asyncio.create_task(self._run(), name=f"outbox-relay:{self.service}")
        logger.info(
            "outbox relay of %s started after notification %s", self.service, self._at.handled
        )

    async def stop(self, timeout: float = 5.0) -> None:
        """Publish what is saved (up to ``timeout``), then stop following the log.

        Args:
            timeout: Seconds to spend flushing before giving up (the rest goes after a restart).
        """
        task, self._task = self._task, None
        if task is None:
            return
        if timeout > 0:
            await self._flush(timeout, task)
        self._stopping.set()
        self._wake.set()
        _, pending = await asyncio.wait({task}, timeout=max(0.1, min(1.0, timeout)))
        for waiting in pending:
            waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        with contextlib.suppress(ValueError):
            self.app.on_saved.remove(self._on_saved)
        with contextlib.suppress(Exception):
            await self._at.record()

    async def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every event saved so far is published and its position recorded.

        Args:
            timeout: Seconds to wait at most.

        Returns:
            True when everything saved before the call is published; False on timeout.
        """
        return await self._flush(timeout, self._task)

    async def __aenter__(self) -> OutboxRelay:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- the loop ------------------------------------------------------------------------------

    def _on_saved(self, notification_id: int) -> None:
        self._at.saw(notification_id)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._wake.set)

    def _read_batch(self, after: int) -> list[Outgoing]:
        notifications = self.app.recorder.select_notifications(
            start=after, limit=self._batch_size, inclusive_of_start=False
        )
        return [
            Outgoing(
                notification_id=n.id,
                origin=f"{n.originator_id}:{n.originator_version}",
                domain_event=self.app.mapper.to_domain_event(n),
            )
            for n in notifications
        ]

    async def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                batch = await self._executor.run(self._read_batch, self._at.handled)
            except Exception:
                failures += 1
                logger.exception("outbox relay of %s: reading the log failed", self.service)
                await self._pacing.pause(self._pacing.backoff(failures))
                continue
            failures = 0
            if batch:
                self._at.saw(batch[-1].notification_id)
            for outgoing in batch:
                if not await self._publisher.publish(outgoing):
                    break
                self._at.handled = outgoing.notification_id
            await self._at.record_quietly()
            if not batch:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._poll_interval)

    async def _flush(self, timeout: float, task: asyncio.Task[None] | None) -> bool:
        target = await self._executor.run(self.app.last_notification_id)
        if self._at.done_upto() >= target:
            return True
        if task is None or task.done():
            return False
        self._wake.set()
        return await self._at.wait_until(target, timeout)
