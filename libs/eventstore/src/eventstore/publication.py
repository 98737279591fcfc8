# mypy: disable-error-code="attr-defined"
# (the fields of events made by eventsourcing's @event are invisible to mypy)
"""Turning a stored event into the message the outbox relay publishes, and what cannot be.

:func:`build_message` maps a stored event with the service's ``to_contract`` and encodes it,
checking the bus size limit with the headers the relay will add. It depends only on the stored
event, so any failure in it is *deterministic*: retrying can never succeed. Such an event

- is refused at the save boundary: the relay installs :func:`check_publishable` as the
  application's ``publication_check``, so the use case that produced it fails with
  :class:`UnpublishableEventError` (``message_too_large``/413 for an oversize one) and nothing
  is saved;
- if it reached the store anyway (saved before the check existed, or by another path), is
  skipped by the relay and recorded as a private :class:`OutboxSkips` ``PublicationSkipped``
  event (audit trail of :func:`skips_id` ``(service)``), never retried forever.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID, uuid5

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import event
from eventsourcing.persistence import Tracking

from contracts.subjects import EVENT_STREAM, SERVICE_NAMES, event_subject
from eventstore.aggregate import ClipyardAggregate
from eventstore.cause import acting, system_cause
from eventstore.msgid import format_msg_id
from eventstore.streamcheck import NOTIFICATION_ID_HEADER, ORIGIN_HEADER
from natsbus.codec import encode
from natsbus.jetstream import MSG_ID_HEADER
from natsbus.limits import MessageTooLargeError, check_size

if TYPE_CHECKING:
    from contracts.subjects import ServiceToken
    from eventstore.application import ServiceApplication

__all__ = [
    "OUTBOX_POSITION",
    "SKIPS_NAMESPACE",
    "EventTooLargeError",
    "OutboxSkips",
    "OutgoingMessage",
    "UnpublishableEventError",
    "build_message",
    "check_publishable",
    "record_skip",
    "skips_id",
]

OUTBOX_POSITION: Final = "clipyard.outbox"
"""The tracking name of the outbox relay's position (``eventstore.OUTBOX_TRACKING``)."""

SKIPS_NAMESPACE: Final = UUID("0b6f2d1e-94a7-4d5c-8a0e-51c3f7e2b9d4")
"""Namespace of the deterministic ids of :class:`OutboxSkips` aggregates."""

_WIDEST_ID: Final = 10**19 - 1
"""Stands for the notification id, unknown before the save, at its widest."""
_TRACEPARENT: Final = "00-" + "0" * 32 + "-" + "0" * 16 + "-01"
"""Stands for the PRODUCER span's ``traceparent`` (same length as any real one)."""
_EXPECTED_STREAM: Final = "Nats-Expected-Stream"


class UnpublishableEventError(Exception):
    """A stored event cannot be published, whatever the retries (its mapping or encoding fails)."""


class EventTooLargeError(UnpublishableEventError):
    """An event is over the bus limit once encoded; mapped to ``message_too_large`` (413)."""

    code: Final = MessageTooLargeError.code
    status: Final = MessageTooLargeError.status

    def __init__(self, message: str, details: dict[str, object]) -> None:
        super().__init__(message)
        self.details = details


@dataclass(frozen=True)
class OutgoingMessage:
    """One event ready to publish."""

    subject: str
    payload: bytes
    msg_id: str
    headers: dict[str, str]
    trace: dict[str, str] | None


def _describe(domain_event: Any) -> str:
    return (
        f"{type(domain_event).__qualname__} of {domain_event.originator_id} "
        f"v{domain_event.originator_version}"
    )


def build_message(
    to_contract: Callable[[Any], Any],
    domain_event: Any,
    *,
    service: ServiceToken,
    notification_id: int,
    origin: str,
) -> OutgoingMessage | None:
    """Map, encode and size-check one stored event as the relay publishes it.

    Args:
        to_contract: The service's mapping (None for a private event).
        domain_event: The stored event.
        service: The publishing service's token.
        notification_id: Its notification id (message id and header).
        origin: ``<aggregate id>:<version>``.

    Returns:
        The message, or None for a private event.

    Raises:
        UnpublishableEventError: The mapping or the encoding fails, or the message is over the
            bus limit (:class:`EventTooLargeError`); retrying cannot help.
    """
    try:
        contract = to_contract(domain_event)
        if contract is None:
            return None
        tag = type(contract).__struct_config__.tag
        if not isinstance(tag, str):
            raise TypeError(f"{type(contract).__name__} is not a tagged contract event")
        subject = event_subject(tag, service)
        payload = encode(contract)
    except Exception as error:
        raise UnpublishableEventError(
            f"{_describe(domain_event)} cannot be published: {type(error).__name__}: {error}"
        ) from error
    trace = getattr(domain_event, "trace", None) or None
    message = OutgoingMessage(
        subject=subject,
        payload=payload,
        msg_id=format_msg_id(service, notification_id),
        headers={NOTIFICATION_ID_HEADER: str(notification_id), ORIGIN_HEADER: origin},
        trace=dict(trace) if trace else None,
    )
    sent = {
        **message.headers,
        **(message.trace or {}),
        "traceparent": _TRACEPARENT,
        MSG_ID_HEADER: message.msg_id,
        _EXPECTED_STREAM: EVENT_STREAM,
    }
    try:
        check_size(subject, payload, sent)
    except MessageTooLargeError as error:
        raise too_large(domain_event, error) from error
    return message


def too_large(domain_event: Any, error: MessageTooLargeError) -> EventTooLargeError:
    """The error of an event over the bus limit.

    Args:
        domain_event: The stored (or about to be stored) event.
        error: The size check's error.

    Returns:
        The error to raise.
    """
    return EventTooLargeError(
        f"{_describe(domain_event)} cannot be published: {error.size} bytes with its headers, "
        f"over the bus limit of {error.limit} bytes; make the event smaller (store large "
        "content elsewhere and publish a reference)",
        {**error.details, "event": type(domain_event).__qualname__},
    )


def check_publishable(
    to_contract: Callable[[Any], Any], domain_event: Any, *, service: ServiceToken
) -> None:
    """Raise unless the relay will be able to publish ``domain_event`` (run before it is saved).

    Args:
        to_contract: The service's mapping.
        domain_event: A pending event.
        service: The publishing service's token.

    Raises:
        UnpublishableEventError: The event could never be published.
    """
    if isinstance(domain_event, OutboxSkips.Event):
        return  # the relay's own private record
    build_message(
        to_contract,
        domain_event,
        service=service,
        notification_id=_WIDEST_ID,
        origin=f"{domain_event.originator_id}:{domain_event.originator_version}",
    )


def skips_id(service: str) -> UUID:
    """The id of the aggregate recording the events ``service``'s relay could not publish.

    Args:
        service: The service token.

    Returns:
        A UUID5, the same in every store.
    """
    return uuid5(SKIPS_NAMESPACE, f"outbox-skips:{service}")


class OutboxSkips(ClipyardAggregate):
    """The stored events one service's outbox relay skipped because they cannot be published."""

    event_aggregate = "outbox"

    @staticmethod
    def create_id(service: str) -> UUID:
        """Deterministic: one aggregate per service."""
        return skips_id(service)

    @event("Opened")
    def __init__(self, service: str) -> None:
        self.service = service
        self.skipped = 0

    class PublicationSkipped(ClipyardAggregate.Event):
        """A stored event was not published: mapping or encoding it fails, or it is too large."""

        notification_id: int
        origin: str
        event_type: str
        error: str

    @event(PublicationSkipped)
    def skip(self, notification_id: int, origin: str, event_type: str, error: str) -> None:
        """Record one skipped notification."""
        self.skipped += 1


def record_skip(
    app: ServiceApplication,
    *,
    service: ServiceToken,
    notification_id: int,
    origin: str,
    event_type: str,
    error: str,
) -> bool:
    """On the store thread: record a ``PublicationSkipped`` and the relay's position, in one save.

    Args:
        app: The service's application.
        service: The service token.
        notification_id: The notification skipped (the relay's new position).
        origin: Its ``<aggregate id>:<version>``.
        event_type: Its stored event class.
        error: Why it can never be published.

    Returns:
        False when the position was recorded already (a republication from an older position).
    """
    if app.has_processed(OUTBOX_POSITION, notification_id):
        return False
    name = {token: n for token, n in SERVICE_NAMES.items()}.get(service, service)
    with acting(system_cause(name, "outbox: the event can never be published")):
        try:
            skips: OutboxSkips = app.repository.get(skips_id(service))
        except AggregateNotFoundError:
            skips = OutboxSkips(service=service)
        skips.skip(
            notification_id=notification_id,
            origin=origin,
            event_type=event_type,
            error=error[:2000],
        )
    app.save_with_tracking(skips, tracking=Tracking(OUTBOX_POSITION, notification_id))
    return True
