"""The event stream ``WS_EVENTS`` and publishing to it (ARCHITECTURE §2, §3).

:func:`ensure_event_stream` creates or updates the stream (every service may call it at start;
calling it again changes nothing). :func:`publish` sends one event, size-checked, in a PRODUCER
span, with ``Nats-Msg-Id`` for JetStream's de-duplication, and returns the server's ack.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

import nats.js.errors
from nats.js.api import (
    DiscardPolicy,
    Header,
    PubAck,
    RetentionPolicy,
    StorageType,
    StreamConfig,
    StreamInfo,
)
from nats.js.client import JetStreamContext
from opentelemetry import context as otel_context

from contracts.subjects import EVENT_STREAM, EVENT_STREAM_SUBJECTS
from natsbus.codec import encode
from natsbus.limits import MAX_MESSAGE_BYTES, check_size
from telemetry import propagation
from telemetry.spans import producer_span

__all__ = [
    "DEFAULT_DUPLICATE_WINDOW",
    "DEFAULT_MAX_AGE",
    "MSG_ID_HEADER",
    "ensure_event_stream",
    "event_stream_config",
    "publish",
]

logger = logging.getLogger(__name__)

DEFAULT_DUPLICATE_WINDOW: Final = 600.0
"""Seconds within which a repeated ``Nats-Msg-Id`` is dropped (10 minutes)."""

DEFAULT_MAX_AGE: Final = 30 * 24 * 3600.0
"""Seconds an event stays in the stream (30 days)."""

MSG_ID_HEADER: Final = "Nats-Msg-Id"


def event_stream_config(
    *, duplicate_window: float = DEFAULT_DUPLICATE_WINDOW, max_age: float = DEFAULT_MAX_AGE
) -> StreamConfig:
    """The configuration of ``WS_EVENTS``.

    Args:
        duplicate_window: Seconds of ``Nats-Msg-Id`` de-duplication.
        max_age: Seconds an event is kept.

    Returns:
        The stream configuration: ``ws.evt.>``, file storage, limits retention; nobody may
        delete single messages (``deny_delete``) or purge it (``deny_purge``). Deleting the
        whole stream is a separate API that ``deploy/nats/nats.conf`` grants to no user.
    """
    return StreamConfig(
        name=EVENT_STREAM,
        description="Clipyard public events",
        subjects=[EVENT_STREAM_SUBJECTS],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        discard=DiscardPolicy.OLD,
        max_age=max_age,
        duplicate_window=duplicate_window,
        max_msg_size=MAX_MESSAGE_BYTES,
        deny_delete=True,
        deny_purge=True,
    )


def _differs(current: StreamConfig, wanted: StreamConfig) -> bool:
    def seconds(value: float | None) -> float:
        return round(value or 0.0, 3)

    return (
        sorted(current.subjects or []) != sorted(wanted.subjects or [])
        or current.retention != wanted.retention
        or current.storage != wanted.storage
        or current.max_msg_size != wanted.max_msg_size
        or seconds(current.max_age) != seconds(wanted.max_age)
        or seconds(current.duplicate_window) != seconds(wanted.duplicate_window)
        or bool(current.deny_delete) != bool(wanted.deny_delete)
        or bool(current.deny_purge) != bool(wanted.deny_purge)
    )


async def ensure_event_stream(
    js: JetStreamContext,
    *,
    duplicate_window: float = DEFAULT_DUPLICATE_WINDOW,
    max_age: float = DEFAULT_MAX_AGE,
) -> StreamInfo:
    """Create ``WS_EVENTS`` or bring its settings to the ones given; idempotent.

    A stream made before ``deny_delete``/``deny_purge`` existed gets them by the update (the
    server accepts adding them, never removing them).

    Args:
        js: The JetStream context.
        duplicate_window: Seconds of ``Nats-Msg-Id`` de-duplication.
        max_age: Seconds an event is kept.

    Returns:
        The stream's info after the call.

    Raises:
        nats.js.errors.APIError: The server refused (an unchangeable setting, such as storage).
    """
    wanted = event_stream_config(duplicate_window=duplicate_window, max_age=max_age)
    try:
        info = await js.stream_info(EVENT_STREAM)
    except nats.js.errors.NotFoundError:
        try:
            info = await js.add_stream(wanted)
            logger.info("created stream %s", EVENT_STREAM)
            return info
        except nats.js.errors.BadRequestError:
            # Another service created it in the meantime with other settings: update below.
            info = await js.stream_info(EVENT_STREAM)
    if not _differs(info.config, wanted):
        return info
    info = await js.update_stream(wanted)
    logger.info("updated stream %s", EVENT_STREAM)
    return info


@contextmanager
def _continuing(trace_headers: Mapping[str, str] | None) -> Iterator[None]:
    """Make the context stored in ``trace_headers`` current (the relay's stored trace)."""
    if not trace_headers:
        yield
        return
    token = otel_context.attach(propagation.extract(dict(trace_headers)))
    try:
        yield
    finally:
        otel_context.detach(token)


async def publish(
    js: JetStreamContext,
    subject: str,
    payload: Any,
    *,
    msg_id: str | None = None,
    trace_headers: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    stream: str | None = EVENT_STREAM,
    timeout: float | None = None,
) -> PubAck:
    """Publish one message to JetStream and wait for the stream's ack.

    Args:
        js: The JetStream context.
        subject: The event subject (``contracts.subjects.event_subject``).
        payload: A Struct (encoded here) or bytes.
        msg_id: ``Nats-Msg-Id``, for de-duplication within the stream's window.
        trace_headers: The W3C headers stored with the event: the PRODUCER span continues that
            trace (the outbox relay passes them; live publishers leave it out).
        headers: Extra headers.
        stream: The stream expected to store it (``Nats-Expected-Stream``), or None.
        timeout: Seconds to wait for the ack (the context's default when None).

    Returns:
        The ack; ``ack.duplicate`` is true when the message id was seen within the window.

    Raises:
        MessageTooLargeError: Over the bus limit; nothing was sent.
        nats.js.errors.NoStreamResponseError: No stream stores ``subject``.
        nats.js.errors.APIError: The stream refused the message.
        nats.errors.TimeoutError: No ack in time.
    """
    data = bytes(payload) if isinstance(payload, bytes | bytearray) else encode(payload)
    with _continuing(trace_headers), producer_span(subject, operation="publish") as injected:
        sent = {**(headers or {}), **injected}
        if msg_id is not None:
            sent[MSG_ID_HEADER] = msg_id
        if stream is not None:
            sent[Header.EXPECTED_STREAM.value] = stream
        check_size(subject, data, sent)
        return await js.publish(subject, data, timeout=timeout, headers=sent)
