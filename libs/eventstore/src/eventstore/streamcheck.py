"""Does the event stream agree with the store? Checked by the outbox relay before it publishes.

Every message the relay publishes carries its notification id (``Nats-Msg-Id:
<service>:<id>`` and ``Clipyard-Notification-Id``) and its origin (``Clipyard-Origin:
<aggregate id>:<version>``). If the stream holds a message of the service beyond the store's last
notification, or one whose origin is not the store's event of that id, the store was wiped or
replaced under a live stream: new events would reuse ids that JetStream de-duplicates and that
consumers have already recorded as processed, so they would be lost. The relay refuses to start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import nats.js.errors

from contracts.subjects import EVENT_STREAM, event_filters_of
from eventstore.msgid import parse_msg_id, parse_notification_id
from natsbus.jetstream import MSG_ID_HEADER

if TYPE_CHECKING:
    from nats.js.client import JetStreamContext

    from contracts.subjects import ServiceToken
    from eventstore.application import ServiceApplication
    from eventstore.executor import StoreExecutor

__all__ = [
    "NOTIFICATION_ID_HEADER",
    "ORIGIN_HEADER",
    "PublishedMessage",
    "RelayRefusedError",
    "check_stream_against_store",
    "last_published",
    "published_notification_id",
]

NOTIFICATION_ID_HEADER: Final = "Clipyard-Notification-Id"
ORIGIN_HEADER: Final = "Clipyard-Origin"


class RelayRefusedError(RuntimeError):
    """The stream and the store disagree; publishing could lose or mislabel events."""


@dataclass(frozen=True)
class PublishedMessage:
    """The last message of a service found in the stream."""

    notification_id: int
    origin: str | None
    subject: str
    stream_sequence: int


def published_notification_id(headers: dict[str, str] | None, service: str) -> int | None:
    """The notification id a published message carries, if it is one of ``service``'s.

    Args:
        headers: The message headers.
        service: The publishing service's token.

    Returns:
        The id from ``Clipyard-Notification-Id`` or ``Nats-Msg-Id`` (``<service>:<id>``), or None
        (also when an id is not plain ASCII digits: such a message is not one the relay wrote).
    """
    if not headers:
        return None
    from_msg_id = parse_msg_id(headers.get(MSG_ID_HEADER), service)
    if from_msg_id is None:
        return None
    explicit = headers.get(NOTIFICATION_ID_HEADER)
    return parse_notification_id(explicit) if explicit else from_msg_id


async def last_published(js: JetStreamContext, service: ServiceToken) -> PublishedMessage | None:
    """The message with the highest notification id among the last ones on ``service``'s subjects.

    Args:
        js: The JetStream context.
        service: The publishing service's token.

    Returns:
        The message's facts, or None when the stream holds nothing of the service (or is missing).
    """
    last: PublishedMessage | None = None
    for subject_filter in event_filters_of(service):
        try:
            msg = await js.get_last_msg(EVENT_STREAM, subject_filter)
        except nats.js.errors.NotFoundError:
            continue  # nothing on these subjects (or no stream yet)
        # Non-ASCII header values come back as email.header.Header objects: compare text.
        headers = {key: str(value) for key, value in (msg.headers or {}).items()}
        notification_id = published_notification_id(headers, service)
        if notification_id is None:
            continue
        if last is None or notification_id > last.notification_id:
            last = PublishedMessage(
                notification_id=notification_id,
                origin=headers.get(ORIGIN_HEADER),
                subject=msg.subject or subject_filter,
                stream_sequence=msg.seq or 0,
            )
    return last


async def check_stream_against_store(
    js: JetStreamContext,
    app: ServiceApplication,
    executor: StoreExecutor,
    service: ServiceToken,
) -> int | None:
    """Raise unless the store holds every message the stream has of ``service``.

    Args:
        js: The JetStream context.
        app: The service's application.
        executor: The store's thread.
        service: The publishing service's token.

    Returns:
        The last notification id of the service found in the stream (None when there is none).

    Raises:
        RelayRefusedError: The stream is ahead of the store, or names another event at that id.
    """
    published = await last_published(js, service)
    if published is None:
        return None
    store_last = await executor.run(app.last_notification_id)
    where = (
        f"{EVENT_STREAM} holds {service}:{published.notification_id} "
        f"({published.subject}, stream sequence {published.stream_sequence})"
    )
    advice = (
        "Was the store wiped or replaced under a live stream? Restore the store from its backup "
        f"and start again. {EVENT_STREAM} refuses purges, so starting over with an empty store "
        "means stopping NATS and removing its JetStream folder ($CLIPYARD_HOME/nats/jetstream "
        "for `clipyard up`), which forgets every service's published events."
    )
    if published.notification_id > store_last:
        raise RelayRefusedError(
            f"outbox relay of {service} refuses to start: {where}, but the store's last "
            f"notification is {store_last}. {advice}"
        )
    if published.origin is not None:
        notifications = await executor.run(
            app.recorder.select_notifications,
            start=published.notification_id,
            limit=1,
            stop=published.notification_id,
        )
        stored = (
            f"{notifications[0].originator_id}:{notifications[0].originator_version}"
            if notifications
            else None
        )
        if stored != published.origin:
            raise RelayRefusedError(
                f"outbox relay of {service} refuses to start: {where} for event "
                f"{published.origin}, but the store's notification {published.notification_id} "
                f"is {stored or 'missing'}. {advice}"
            )
    return published.notification_id
