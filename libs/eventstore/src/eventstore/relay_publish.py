"""Publishing one stored notification: mapped, encoded, sent, retried until the stream acks it.

:class:`NotificationPublisher` is the outbox relay's hand (:mod:`eventstore.relay`): each
notification is mapped by the service's ``to_contract`` (None: private, nothing to send) and
published to ``contracts.subjects.event_subject(type, service)`` with its message id, notification
id, origin and trace context, awaiting the stream's ack. A transient failure (NATS unreachable,
no ack in time) is retried with backoff, never skipped, so order holds; a deleted stream is created
again; a deterministic failure is recorded as a skip (:mod:`eventstore.relay_recovery`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eventstore.publication import (
    OutboxSkips,
    UnpublishableEventError,
    build_message,
    too_large,
)
from eventstore.relay_recovery import (
    Pacing,
    Unpublishable,
    record_unpublishable,
    recreate_stream,
    stream_missing,
)
from natsbus.jetstream import publish
from natsbus.limits import MessageTooLargeError

if TYPE_CHECKING:
    from collections.abc import Callable

    from eventsourcing.domain import DomainEventProtocol
    from nats.js.client import JetStreamContext

    from contracts.base import Event
    from contracts.subjects import ServiceToken
    from eventstore.application import ServiceApplication
    from eventstore.executor import StoreExecutor
    from eventstore.relay_position import RelayPosition

__all__ = ["NotificationPublisher", "Outgoing", "StreamSettings"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outgoing:
    """One stored notification on its way out."""

    notification_id: int
    origin: str
    """``<aggregate id>:<version>`` of the stored event."""
    domain_event: DomainEventProtocol[Any]


@dataclass(frozen=True)
class StreamSettings:
    """What the event stream is created with again when it is gone (the service's settings)."""

    duplicate_window: float
    max_age: float
    replicas: int = 1


class NotificationPublisher:
    """Publishes the notifications of one service's store, one at a time, until acked."""

    def __init__(
        self,
        app: ServiceApplication,
        js: JetStreamContext,
        executor: StoreExecutor,
        *,
        service: ServiceToken,
        to_contract: Callable[[Any], Event | None],
        publish_timeout: float,
        stream: StreamSettings,
        pacing: Pacing,
        position: RelayPosition,
    ) -> None:
        self._app = app
        self._js = js
        self._executor = executor
        self._service = service
        self._to_contract = to_contract
        self._publish_timeout = publish_timeout
        self._stream = stream
        self._pacing = pacing
        self._position = position
        self.skipped = 0
        """Notifications skipped in this process because they can never be published."""

    async def publish(self, outgoing: Outgoing) -> bool:
        """Publish one notification (or pass a private one), retrying transient failures.

        Returns:
            True when it is published, private, or skipped for good; False when stopping.
        """
        if isinstance(outgoing.domain_event, OutboxSkips.Event):
            return True  # the relay's own record: private, never mapped
        try:
            message = build_message(
                self._to_contract,
                outgoing.domain_event,
                service=self._service,
                notification_id=outgoing.notification_id,
                origin=outgoing.origin,
            )
        except UnpublishableEventError as error:
            return await self._skip(outgoing, error)
        if message is None:
            return True
        attempt = 0
        while not self._pacing.stopping.is_set():
            try:
                await publish(
                    self._js,
                    message.subject,
                    message.payload,
                    msg_id=message.msg_id,
                    trace_headers=message.trace,
                    headers=message.headers,
                    timeout=self._publish_timeout,
                )
                return True
            except asyncio.CancelledError:
                raise
            except MessageTooLargeError as error:
                return await self._skip(outgoing, too_large(outgoing.domain_event, error))
            except Exception as error:
                attempt += 1
                await self._retry_later(outgoing, error, attempt)
        return False

    async def _retry_later(self, outgoing: Outgoing, error: Exception, attempt: int) -> None:
        """Log a failed publish (ERROR from the fifth attempt) and pause before the next."""
        if stream_missing(error):
            await recreate_stream(
                self._js,
                self._service,
                duplicate_window=self._stream.duplicate_window,
                max_age=self._stream.max_age,
                replicas=self._stream.replicas,
            )
        delay = self._pacing.backoff(attempt)
        logger.log(
            logging.WARNING if attempt < 5 else logging.ERROR,
            "outbox relay of %s: publishing notification %s failed (attempt %s), "
            "retrying in %.1f s",
            self._service,
            outgoing.notification_id,
            attempt,
            delay,
            exc_info=error,
        )
        await self._pacing.pause(delay)

    async def _skip(self, outgoing: Outgoing, error: UnpublishableEventError) -> bool:
        """Record that ``outgoing`` can never be published (with its position), and go on.

        Returns:
            True once recorded; False when stopping first (the next start decides again).
        """
        skipped = Unpublishable(
            notification_id=outgoing.notification_id,
            origin=outgoing.origin,
            event_type=type(outgoing.domain_event).__qualname__,
            error=error,
        )
        if not await record_unpublishable(
            self._app, self._executor, self._service, skipped, self._pacing
        ):
            return False
        self.skipped += 1
        self._position.recorded = max(self._position.recorded, outgoing.notification_id)
        return True
