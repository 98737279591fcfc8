"""``clipyard events tail``: follow ``WS_EVENTS`` with a named ephemeral JetStream consumer.

One line per event: stream sequence, type, aggregate id, company, actor, reason. Events are read
as plain JSON envelopes, so a type this CLI does not know yet still prints. Before any service has
created the stream, it says so (and how to fix it) instead of failing.

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
import uuid
from collections.abc import Mapping
from typing import Any, TextIO

import msgspec
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from clipyard_cli.bus import connect_cli, login_from_env
from contracts.subjects import EVENT_STREAM, EVENT_STREAM_SUBJECTS, SHARED_AGGREGATES, token

__all__ = [
    "TAIL_CONSUMER_PREFIX",
    "decode_event",
    "format_event",
    "matches_type",
    "no_stream_message",
    "run_tail",
    "type_filter",
]

TAIL_CONSUMER_PREFIX = "cli-tail-"
"""Names of the consumers ``events tail`` reads with (the only ones user ``cli`` may touch)."""
_INACTIVE_THRESHOLD = 30.0
"""Seconds after which the server deletes a tail consumer nobody pulls from."""
_PULL_WAIT = 0.5
"""Seconds one pull waits before the tail looks at Ctrl-C again."""
_PULL_BATCH = 256


def type_filter(type_tag: str | None) -> str:
    """The stream subject filter selecting one event type (or an aggregate's, or all).

    ``workspace.realized.v1`` and ``workspace.realized`` → ``ws.evt.workspace.realized``;
    ``operation.finished.v1`` → ``ws.evt.operation.finished.*`` (shared aggregates end with the
    publishing service); ``workspace`` → ``ws.evt.workspace.>``; nothing → ``ws.evt.>``.

    Raises:
        ValueError: The type is not ``<aggregate>[.<event>[.v<N>]]`` of valid tokens.
    """
    if not type_tag:
        return EVENT_STREAM_SUBJECTS
    parts = type_tag.split(".")
    if len(parts) > 3 or (len(parts) == 3 and not parts[2].startswith("v")):
        raise ValueError(
            f"--type {type_tag!r}: expected <aggregate>.<event>.v<N>, e.g. company.created.v1"
        )
    aggregate = token(parts[0])
    if len(parts) == 1:
        return f"ws.evt.{aggregate}.>"
    name = token(parts[1])
    suffix = ".*" if aggregate in SHARED_AGGREGATES else ""
    return f"ws.evt.{aggregate}.{name}{suffix}"


def matches_type(type_tag: str | None, event: Mapping[str, Any]) -> bool:
    """Whether ``event`` has the exact versioned type asked for (unversioned asks match any)."""
    if not type_tag or type_tag.count(".") < 2:
        return True
    return event.get("type") == type_tag


def format_event(seq: int, event: Mapping[str, Any]) -> str:
    """``<seq>  <type>  <aggregateId>  company=<id>  actor=<type>:<id>  reason=<text>``."""
    actor = event.get("actor")
    who = f"{actor.get('type', '?')}:{actor.get('id', '?')}" if isinstance(actor, dict) else "-"
    return (
        f"{seq:>8}  {event.get('type', '?'):<34} {event.get('aggregateId') or '-':<36}  "
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
    type_tag: str | None = None,
    from_start: bool = False,
    follow: bool = True,
    err: TextIO | None = None,
) -> int:
    """Print events as they arrive (from the first stored one with ``from_start``).

    Args:
        env: The process environment (NATS login).
        out: Where to print.
        type_tag: Only events of this type (see :func:`type_filter`).
        from_start: Start from the oldest stored event instead of new ones.
        follow: Keep waiting for new events; when False, stop once caught up.
        err: Where to say what went wrong (default: stderr).

    Returns:
        0 (stopped by Ctrl-C or caught up), 1 when there is no event stream yet.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    subject = type_filter(type_tag)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    login = login_from_env(env)
    nc = await connect_cli(login)
    js = nc.jetstream()
    name = f"{TAIL_CONSUMER_PREFIX}{uuid.uuid4().hex}"
    created = False
    try:
        try:
            info = await js.add_consumer(
                EVENT_STREAM,
                ConsumerConfig(
                    name=name,
                    deliver_policy=DeliverPolicy.ALL if from_start else DeliverPolicy.NEW,
                    ack_policy=AckPolicy.NONE,
                    filter_subject=subject,
                    inactive_threshold=_INACTIVE_THRESHOLD,
                    mem_storage=True,
                    num_replicas=1,
                ),
            )
        except nats.js.errors.NotFoundError:
            print(no_stream_message(login.url), file=err, flush=True)
            return 1
        created = True
        if not follow and not info.num_pending:
            return 0
        sub = await js.pull_subscribe_bind(name, stream=EVENT_STREAM)
        delivered = 0
        while not stopping.is_set():
            try:
                msgs = await sub.fetch(_PULL_BATCH, timeout=_PULL_WAIT)
            except TimeoutError:
                continue
            for msg in msgs:
                meta = msg.metadata
                if meta.sequence.consumer != delivered + 1:
                    raise RuntimeError(
                        f"events were lost: consumer sequence {meta.sequence.consumer} "
                        f"after {delivered}"
                    )
                delivered = meta.sequence.consumer
                event = decode_event(msg.data)
                seq = meta.sequence.stream
                if event is None:
                    print(f"{seq:>8}  (not a JSON event on {msg.subject})", file=out, flush=True)
                elif matches_type(type_tag, event):
                    print(format_event(seq, event), file=out, flush=True)
                if not follow and meta.num_pending == 0:
                    return 0
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        if created:
            with contextlib.suppress(Exception):  # inactivity removes it anyway
                await js.delete_consumer(EVENT_STREAM, name)
        await nc.close()
    return 0
