"""``clipyard events tail``: follow ``WS_EVENTS`` with a named ephemeral JetStream consumer.

One line per event: stream sequence, type, label, aggregate id, company, actor, reason. Events are
read as plain JSON envelopes, so a type this CLI does not know yet still prints. Before any service
has created the stream, it says so (and how to fix it) instead of failing.

``--type`` takes the filter of the API (``contracts.event_filters``): types (``run.queued.v1``),
types without version (``run.queued``) and aggregates (``run``), comma separated or repeated. It is
checked against the published types before anything is asked of NATS (a value it does not know is
an error naming what is accepted); one value narrows the consumer's subject filter, several are
matched here.

The consumer is ``cli-tail-<uuid>``: nats.conf lets user ``cli`` create, pull from and delete only
consumers of that prefix, through the named consumer API (the unnamed one carries the name in the
body, where permissions cannot see it). It acknowledges nothing, is deleted when the tail ends, and
the server drops it after ``_INACTIVE_THRESHOLD`` seconds without pulls (a killed CLI).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import msgspec
import nats.js.errors

from clipyard_cli.bus import connect_cli, login_from_env
from contracts.event_filters import EventFilter, parse_event_filter
from contracts.event_types import PUBLIC_EVENT_TYPES, event_label
from contracts.subjects import (
    EVENT_STREAM,
    EVENT_STREAM_SUBJECTS,
    SHARED_AGGREGATES,
    aggregate_events,
    event,
)
from natsbus.connection import redact_url
from natsbus.tail import StreamTail

__all__ = [
    "TAIL_CONSUMER_PREFIX",
    "decode_event",
    "format_event",
    "matches_type",
    "no_stream_message",
    "parse_type",
    "run_tail",
    "type_filter",
]

TAIL_CONSUMER_PREFIX = "cli-tail-"
"""Names of the consumers ``events tail`` reads with (the only ones user ``cli`` may touch)."""
_INACTIVE_THRESHOLD = 30.0
"""Seconds after which the server deletes a tail consumer nobody pulls from."""


Wanted = EventFilter | str | Sequence[str] | None
"""A ``--type`` filter: parsed, or as given (see :func:`parse_type`)."""


def parse_type(type_tag: Wanted) -> EventFilter | None:
    """The ``--type`` values (comma lists, repeated) as a filter of published types.

    Raises:
        UnknownEventFilterError: A value names no published type, type without version or
            aggregate (a ``ValueError`` whose message says what is accepted).
    """
    if type_tag is None or isinstance(type_tag, EventFilter):
        return type_tag
    return parse_event_filter(type_tag, PUBLIC_EVENT_TYPES, name="--type")


def type_filter(type_tag: Wanted) -> str:
    """The stream subject filter of a ``--type`` filter, built from checked tokens only.

    ``workspace.realized.v1`` and ``workspace.realized`` → ``ws.evt.workspace.realized``;
    ``operation.finished.v1`` → ``ws.evt.operation.finished.*`` (shared aggregates end with the
    publishing service); ``workspace`` → ``ws.evt.workspace.>``; nothing, or several values
    (matched by :func:`matches_type`) → ``ws.evt.>``.

    Raises:
        UnknownEventFilterError: See :func:`parse_type`.
    """
    wanted = parse_type(type_tag)
    if wanted is None or len(wanted.values) != 1:
        return EVENT_STREAM_SUBJECTS
    aggregate, _, rest = wanted.values[0].partition(".")
    if not rest:
        return aggregate_events(aggregate)
    subject = event(aggregate, rest.partition(".")[0])
    return f"{subject}.*" if aggregate in SHARED_AGGREGATES else subject


def matches_type(type_tag: Wanted, event: Mapping[str, Any]) -> bool:
    """Whether ``event``'s type passes the filter (no filter: every event)."""
    wanted = parse_type(type_tag)
    found = event.get("type")
    return wanted is None or (isinstance(found, str) and wanted.matches(found))


def format_event(seq: int, event: Mapping[str, Any]) -> str:
    """``<seq>  <type>  <label>  <aggregateId>  company=<id>  actor=<type>:<id>  reason=<text>``."""
    actor = event.get("actor")
    who = f"{actor.get('type', '?')}:{actor.get('id', '?')}" if isinstance(actor, dict) else "-"
    kind = event.get("type")
    label = event_label(kind) if isinstance(kind, str) else "?"
    return (
        f"{seq:>8}  {kind or '?':<34} {label:<32} {event.get('aggregateId') or '-':<36}  "
        f"company={event.get('companyId') or '-'}  actor={who}  reason={event.get('reason') or '-'}"
    )


def decode_event(data: bytes) -> dict[str, Any] | None:
    """The JSON envelope of a stream message, or ``None`` when it is not a JSON object."""
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def no_stream_message(url: str) -> str:
    """What to say when the NATS server at ``url`` has no event stream yet."""
    return (
        f"clipyard events tail: the NATS server at {url} has no event stream {EVENT_STREAM} yet "
        "(the services create it when they first start). Start the stack with `clipyard up` "
        "(or point CLIPYARD_NATS_URL at the running one), then run this again."
    )


async def run_tail(
    env: Mapping[str, str],
    out: TextIO | None = None,
    *,
    type_tag: Wanted = None,
    from_start: bool = False,
    follow: bool = True,
    err: TextIO | None = None,
    as_json: bool = False,
) -> int:
    """Print events as they arrive (from the first stored one with ``from_start``).

    Args:
        env: The process environment (NATS login).
        out: Where to print.
        type_tag: Only events this filter passes (see :func:`parse_type`).
        from_start: Start from the oldest stored event instead of new ones.
        follow: Keep waiting for new events; when False, stop once caught up.
        err: Where to say what went wrong (default: stderr).
        as_json: One JSON object a line (``{"sequence", "subject", "event"}``, the event as
            published) instead of the table.

    Returns:
        0 (stopped by Ctrl-C or caught up), 1 when there is no event stream yet.

    Raises:
        UnknownEventFilterError: ``type_tag`` names no published type (before connecting).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    wanted = parse_type(type_tag)
    subject = type_filter(wanted)
    login = login_from_env(env)
    nc = await connect_cli(login)
    try:
        tail = StreamTail(
            nc.jetstream(),
            prefix=TAIL_CONSUMER_PREFIX,
            filter_subject=subject,
            from_start=from_start,
            inactive_threshold=_INACTIVE_THRESHOLD,
        )
        async with tail:
            if follow or tail.pending:
                await _until_done_or_interrupted(
                    asyncio.ensure_future(_print(tail, out, wanted, follow=follow, as_json=as_json))
                )
    except nats.js.errors.NotFoundError:
        print(no_stream_message(redact_url(login.url)), file=err, flush=True)
        return 1
    finally:
        await nc.close()
    return 0


async def _print(
    tail: StreamTail,
    out: TextIO,
    wanted: EventFilter | None,
    *,
    follow: bool,
    as_json: bool = False,
) -> None:
    async for message in tail:
        envelope = decode_event(message.data)
        if as_json and (matches_type(wanted, envelope) if envelope else wanted is None):
            line = {"sequence": message.sequence, "subject": message.subject, "event": envelope}
            print(msgspec.json.encode(line).decode(), file=out, flush=True)
        elif envelope is None:
            line_text = f"{message.sequence:>8}  (not a JSON event on {message.subject})"
            print(line_text, file=out, flush=True)
        elif matches_type(wanted, envelope):
            print(format_event(message.sequence, envelope), file=out, flush=True)
        if not follow and message.pending == 0:
            return


async def _until_done_or_interrupted(reading: asyncio.Future[None]) -> None:
    """Wait for ``reading``; Ctrl-C or SIGTERM ends it (its error, if any, is raised)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, reading.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await reading
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
