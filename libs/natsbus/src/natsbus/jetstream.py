"""The event stream ``WS_EVENTS`` and publishing to it (ARCHITECTURE §2, §3).

:func:`ensure_event_stream` creates the stream or brings it up to what the service needs, never
lowering what another service or an operator set higher (:mod:`natsbus.stream_merge`); every
service calls it at start, and calling it again changes nothing. Given ``wait``, it first waits
that long for JetStream itself: a cluster answers only once a majority of its servers is up and
has elected a meta leader. :func:`publish` sends one event, size-checked, in a PRODUCER
span, with ``Nats-Msg-Id`` for JetStream's de-duplication, and returns the server's ack.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

import nats.errors
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
from natsbus.jetstream_wait import EventStreamUnavailableError, unavailable, wait_for_jetstream
from natsbus.limits import MAX_MESSAGE_BYTES, check_size
from natsbus.stream_merge import StreamMerge, merge_stream_config
from telemetry import propagation
from telemetry.spans import producer_span

__all__ = [
    "DEFAULT_DUPLICATE_WINDOW",
    "DEFAULT_MAX_AGE",
    "MSG_ID_HEADER",
    "START_WAIT",
    "EventStreamUnavailableError",
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

_STREAM_NAME_IN_USE: Final = 10058
"""JetStream's error code for a create whose stream another client created meanwhile."""

START_WAIT: Final = 30.0
"""Seconds a starting service waits for JetStream to answer (``ensure_event_stream``'s ``wait``)."""


def event_stream_config(
    *,
    duplicate_window: float = DEFAULT_DUPLICATE_WINDOW,
    max_age: float = DEFAULT_MAX_AGE,
    replicas: int = 1,
) -> StreamConfig:
    """The configuration of ``WS_EVENTS``.

    Args:
        duplicate_window: Seconds of ``Nats-Msg-Id`` de-duplication.
        max_age: Seconds an event is kept.
        replicas: How many JetStream servers keep a copy (at most the cluster's size, 5).

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
        num_replicas=replicas,
        deny_delete=True,
        deny_purge=True,
    )


async def ensure_event_stream(
    js: JetStreamContext,
    *,
    duplicate_window: float = DEFAULT_DUPLICATE_WINDOW,
    max_age: float = DEFAULT_MAX_AGE,
    replicas: int = 1,
    wait: float = 0.0,
) -> StreamInfo:
    """Create ``WS_EVENTS``, or raise its settings to the ones given; idempotent.

    An existing stream is merged with :func:`~natsbus.stream_merge.merge_stream_config`: nothing
    is lowered (replicas, retention, limits, protections), subjects are added, and each
    difference is logged as one warning (``extra``: ``field``, ``current``, ``wanted``,
    ``chosen``, ``winner``, ``reason``); the stream is updated only when something must change.
    A stream made before ``deny_delete``/``deny_purge`` existed gets them by the update.

    With ``wait``, a JetStream that is not there yet (a cluster without a meta leader: 503, code
    10008; no responders; timeouts) is waited for: the whole call is tried again after 0.1 s,
    doubling up to 2 s, for at most ``wait`` seconds, with one warning saying what it waits for.
    Any other error is raised at once.

    Args:
        js: The JetStream context.
        duplicate_window: Seconds of ``Nats-Msg-Id`` de-duplication.
        max_age: Seconds an event is kept.
        replicas: How many JetStream servers keep a copy.
        wait: Seconds to wait for JetStream to answer (a starting service: :data:`START_WAIT`);
            0 tries once.

    Returns:
        The stream's info after the call. When the server refuses the update (a change it
        cannot make in place, more replicas than servers), the refusal is logged as an error and
        the stream's info is returned as it is: it still works.

    Raises:
        nats.js.errors.APIError: The server refused to create the stream (more replicas than
            JetStream servers); logged with the fix first.
        EventStreamUnavailableError: JetStream was not available within ``wait`` (> 0); logged.
    """
    wanted = event_stream_config(
        duplicate_window=duplicate_window, max_age=max_age, replicas=replicas
    )
    if wait <= 0:
        return await _ensure(js, wanted)
    return await wait_for_jetstream(lambda: _ensure(js, wanted), wait=wait, stream=EVENT_STREAM)


async def _ensure(js: JetStreamContext, wanted: StreamConfig) -> StreamInfo:
    """One try of :func:`ensure_event_stream`."""
    try:
        info = await js.stream_info(EVENT_STREAM)
    except nats.js.errors.NotFoundError:
        created = await _create(js, wanted)
        if created is not None:
            return created
        info = await js.stream_info(EVENT_STREAM)  # another service created it meanwhile
    merge = merge_stream_config(info.config, wanted)
    _log_differences(merge)
    if not merge.changed:
        return info
    changed = [d.field for d in merge.differences if d.changes]
    try:
        info = await js.update_stream(merge.config)
    except nats.js.errors.APIError as error:
        if unavailable(error):
            raise  # no answer yet: not a refusal
        logger.error(
            "stream %s: the server refused to change %s (%s); the stream keeps its settings",
            EVENT_STREAM,
            ", ".join(changed),
            error.description,
            extra={"stream": EVENT_STREAM, "fields": changed, "err_code": error.err_code},
        )
        return await js.stream_info(EVENT_STREAM)
    logger.info("updated stream %s", EVENT_STREAM, extra={"fields": changed})
    return info


async def _create(js: JetStreamContext, wanted: StreamConfig) -> StreamInfo | None:
    """Create the stream; None when another client created it first."""
    try:
        info = await js.add_stream(wanted)
    except nats.js.errors.APIError as error:
        if error.err_code == _STREAM_NAME_IN_USE:
            return None
        if unavailable(error):
            raise  # no answer yet: not a refusal
        hint = (
            "; set CLIPYARD_EVENT_REPLICAS to at most the number of JetStream servers "
            "(1 without a cluster, at most 5)"
            if (wanted.num_replicas or 1) > 1
            else ""
        )
        logger.error(
            "stream %s cannot be created with %s replica(s): %s%s",
            EVENT_STREAM,
            wanted.num_replicas,
            error.description,
            hint,
            extra={"stream": EVENT_STREAM, "err_code": error.err_code},
        )
        raise
    logger.info("created stream %s", EVENT_STREAM, extra={"replicas": wanted.num_replicas})
    return info


_ACTIONS: Final = {
    "current": "keeping the stream's",
    "wanted": "setting this service's",
    "merged": "setting the union",
}


def _log_differences(merge: StreamMerge) -> None:
    """One warning per field on which the stream and this service differ."""
    for d in merge.differences:
        logger.warning(
            "stream %s: %s differs: the stream has %r, this service wants %r; %s %r (%s)",
            EVENT_STREAM,
            d.field,
            d.current,
            d.wanted,
            _ACTIONS[d.winner],
            d.chosen,
            d.reason,
            extra={
                "stream": EVENT_STREAM,
                "field": d.field,
                "current": d.current,
                "wanted": d.wanted,
                "chosen": d.chosen,
                "winner": d.winner,
                "reason": d.reason,
            },
        )


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
