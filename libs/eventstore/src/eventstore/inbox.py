"""The inbox: consume one upstream service's events, in order, each applied exactly once.

One durable pull consumer per upstream (``natsbus.OrderedConsumer``: explicit ack, one message
pending at a time, filtered on ``contracts.subjects.event_filters_of(upstream)``). For each message:

1. the upstream notification id comes from ``Nats-Msg-Id`` (``<upstream>:<id>``);
2. the envelope is decoded first (``type``, ``eventId``, ``aggregate``, ``aggregateId``,
   ``aggregateVersion``). A type this build does not know (an upstream upgraded before this
   service, in a rolling upgrade) is not an error: its position is recorded and it is skipped,
   logged at INFO and counted (:attr:`Inbox.unknown_skipped`);
3. a known type is decoded as ``contracts.events.AnyEvent``;
4. on the store's thread: if the position is already recorded the message is skipped (a
   redelivery or a republication changes nothing); otherwise ``handler(event, tracking)`` runs
   inside a :class:`~eventstore.cause.Cause` of the service reacting, and must save what it
   produces with ``app.save_with_tracking(..., tracking=tracking)`` (one transaction). If it
   saved nothing, the position alone is recorded.

A malformed message (not JSON, no event envelope, a known type that does not decode, no valid
id), one whose handler raises ``natsbus.PoisonMessage``, or one whose handler's save is refused
because the reaction could never be published (``UnpublishableEventError``) is poison: it is
terminated and recorded as an ``InboxRejections.MessageRejected`` event, with its position when
known. Any other failure is retried (``nak`` with a growing delay).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import Tracking

from contracts.base import Actor
from contracts.events import ALL_EVENT_TYPES, AnyEvent
from contracts.subjects import SERVICE_NAMES, event_filters_of
from eventstore.cause import Cause, acting, system_cause
from eventstore.msgid import parse_msg_id
from eventstore.publication import UnpublishableEventError
from eventstore.rejections import InboxRejections, rejections_id
from natsbus.consumer import DEFAULT_RETRY_DELAYS, OrderedConsumer, PoisonMessage
from natsbus.jetstream import MSG_ID_HEADER

if TYPE_CHECKING:
    from nats.aio.msg import Msg
    from nats.js.client import JetStreamContext

    from contracts.subjects import ServiceToken
    from eventstore.application import ServiceApplication
    from eventstore.executor import StoreExecutor

__all__ = ["KNOWN_EVENT_TYPES", "Inbox", "InboxHandler", "parse_msg_id"]

InboxHandler = Callable[[Any, Tracking], None]
"""``handler(event, tracking)``: runs on the store's thread; saves with ``tracking``."""

logger = logging.getLogger(__name__)


class _Envelope(msgspec.Struct, rename="camel"):
    """What every event carries, whatever its type (other fields are ignored here)."""

    type: str
    event_id: str
    aggregate: str
    aggregate_id: str
    aggregate_version: int


_ENVELOPE: Final = msgspec.json.Decoder(_Envelope)
_DECODER: Final = msgspec.json.Decoder(AnyEvent)
KNOWN_EVENT_TYPES: Final = frozenset(
    str(event_type.__struct_config__.tag) for event_type in ALL_EVENT_TYPES
)
"""The event types this build can decode."""


class Inbox:
    """Applies one upstream service's events to this service's store, each exactly once."""

    def __init__(
        self,
        app: ServiceApplication,
        js: JetStreamContext,
        *,
        upstream: ServiceToken,
        handler: InboxHandler,
        executor: StoreExecutor,
        durable: str | None = None,
        ack_wait: float = 30.0,
        fetch_timeout: float = 1.0,
        retry_delays: tuple[float, ...] = DEFAULT_RETRY_DELAYS,
    ) -> None:
        """Describe the inbox; :meth:`start` creates the consumer.

        Args:
            app: The consuming service's application.
            js: The JetStream context.
            upstream: The service whose events are consumed.
            handler: Applies one event; saves with the tracking it is given.
            executor: The store's thread.
            durable: The durable consumer name (default ``inbox-<service>-<upstream>``).
            ack_wait: Seconds before the server redelivers an unacknowledged message.
            fetch_timeout: Seconds each fetch waits (bounds how long stopping takes).
            retry_delays: Seconds before redelivery after each failure; the last repeats.
        """
        if durable is None:
            if not app.service:
                raise ValueError("the application has no service name: pass durable=...")
            durable = f"inbox-{app.service}-{upstream}"
        self.app = app
        self.upstream = upstream
        self.durable = durable
        self._handler = handler
        self._executor = executor
        self._actor = Actor(type="system", id=self._service_name())
        self.unknown_skipped: Counter[str] = Counter()
        """Events of a type this build does not know, skipped (position recorded), by type."""
        self._consumer = OrderedConsumer(
            js,
            durable=durable,
            filter_subjects=event_filters_of(upstream),
            handler=self._on_message,
            on_poison=self._on_poison,
            ack_wait=ack_wait,
            fetch_timeout=fetch_timeout,
            retry_delays=retry_delays,
        )

    def _service_name(self) -> str:
        service = self.app.service or self.app.name
        names: dict[str, str] = {token: name for token, name in SERVICE_NAMES.items()}
        return names.get(service, service)

    async def start(self) -> None:
        """Create (or update) the durable consumer and start consuming."""
        await self._consumer.start()

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop consuming; the message in hand finishes first (up to ``timeout``).

        Args:
            timeout: Seconds to wait for the message in hand.
        """
        await self._consumer.stop(timeout)

    async def __aenter__(self) -> Inbox:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- handling ------------------------------------------------------------------------------

    async def _on_message(self, msg: Msg) -> None:
        headers = msg.headers or {}
        notification_id = parse_msg_id(headers.get(MSG_ID_HEADER), self.upstream)
        if notification_id is None:
            raise PoisonMessage(
                f"no valid {MSG_ID_HEADER} '{self.upstream}:<id>' "
                f"(got {headers.get(MSG_ID_HEADER)!r})"
            )
        try:
            envelope = _ENVELOPE.decode(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise PoisonMessage(f"undecodable event: {error}") from error
        tracking = Tracking(self.upstream, notification_id)
        if envelope.type not in KNOWN_EVENT_TYPES:
            await self._skip_unknown(envelope, tracking)
            return
        try:
            decoded = _DECODER.decode(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise PoisonMessage(f"undecodable event {envelope.type}: {error}") from error
        tag = type(decoded).__struct_config__.tag
        cause = Cause(
            actor=self._actor,
            run_id=decoded.run_id,
            reason=f"{tag} from {self.upstream}:{notification_id}",
            company_id=decoded.company_id,
        )
        try:
            await self._executor.run(self._process, decoded, tracking, cause)
        except UnpublishableEventError as error:
            # Retrying would save the same unpublishable reaction again: reject, do not loop.
            raise PoisonMessage(f"the reaction to {tag} can never be published: {error}") from error

    async def _skip_unknown(self, envelope: _Envelope, tracking: Tracking) -> None:
        """Record the position of an event of an unknown type, so the inbox goes on."""
        if not await self._executor.run(self._record_position, tracking):
            return
        self.unknown_skipped[envelope.type] += 1
        logger.info(
            "inbox of %s: skipped %s from %s:%s (aggregate %s %s v%s), a type this build does "
            "not know (%s skipped so far)",
            self._service_name(),
            envelope.type,
            tracking.application_name,
            tracking.notification_id,
            envelope.aggregate,
            envelope.aggregate_id,
            envelope.aggregate_version,
            self.unknown_skipped.total(),
        )

    def _record_position(self, tracking: Tracking) -> bool:
        """On the store thread: record ``tracking`` alone, unless it is recorded already."""
        if self.app.has_processed(tracking.application_name, tracking.notification_id):
            return False
        self.app.save_with_tracking(tracking=tracking)
        return True

    def _process(self, decoded: Any, tracking: Tracking, cause: Cause) -> bool:
        """On the store thread: skip what is recorded, else handle and record the position."""
        if self.app.has_processed(tracking.application_name, tracking.notification_id):
            return False
        with acting(cause):
            self._handler(decoded, tracking)
        if not self.app.has_processed(tracking.application_name, tracking.notification_id):
            self.app.save_with_tracking(tracking=tracking)
        return True

    async def _on_poison(self, msg: Msg, error: PoisonMessage) -> None:
        headers = msg.headers or {}
        msg_id = headers.get(MSG_ID_HEADER)
        await self._executor.run(
            self._record_rejection,
            msg.subject,
            msg.metadata.sequence.stream,
            str(error) or type(error).__name__,
            msg_id,
            parse_msg_id(msg_id, self.upstream),
        )

    def _record_rejection(
        self,
        subject: str,
        stream_sequence: int,
        error: str,
        msg_id: str | None,
        notification_id: int | None,
    ) -> None:
        """On the store thread: record the rejection (with the position when known), once."""
        tracking = Tracking(self.upstream, notification_id) if notification_id else None
        if tracking and self.app.has_processed(self.upstream, tracking.notification_id):
            return
        cause = system_cause(self._service_name(), f"poison message from {self.upstream}")
        with acting(cause):
            try:
                rejections: InboxRejections = self.app.repository.get(rejections_id(self.upstream))
            except AggregateNotFoundError:
                rejections = InboxRejections(upstream=self.upstream)
            rejections.reject(
                upstream=self.upstream,
                subject=subject,
                stream_sequence=stream_sequence,
                error=error[:2000],
                msg_id=msg_id,
                notification_id=notification_id,
            )
        if tracking is not None:
            self.app.save_with_tracking(rejections, tracking=tracking)
        else:
            self.app.save(rejections)
