"""``clipyard audit <aggregate-id>``: the stored history of one aggregate, from its owner.

Every service is asked (``ws.qry.<token>.audit``); the one that owns the aggregate answers with
its history, the others with ``not_found``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import TextIO

import msgspec
from nats.aio.client import Client

from clipyard_cli.bus import CLI_PRINCIPAL, connect_cli, login_from_env
from contracts.event_types import event_label
from contracts.service import AuditTrail, GetAuditTrail, StoredEvent
from contracts.subjects import SERVICES, ServiceToken, service_query
from natsbus.client import BusClient, BusRequestError

__all__ = ["fetch_trail", "format_stored_event", "format_trail", "run_audit"]

PAGE = 200
"""Events asked for per page; halved while a page is too large for one bus message."""


def format_stored_event(event: StoredEvent) -> str:
    """``v<version>  <occurredAt>  <type>  <label>  actor=..  run=..  reason=..`` and the data as
    JSON (``type`` is the public type: the stored class is in ``--json``'s ``storedType``)."""
    actor = event.actor or {}
    who = f"{actor.get('type', '?')}:{actor.get('id', '?')}" if actor else "-"
    label = event.label or event_label(event.type)
    head = (
        f"v{event.aggregate_version:<4} {event.occurred_at.isoformat()}  {event.type}  {label}  "
        f"actor={who}  run={event.run_id or '-'}  reason={event.reason or '-'}"
    )
    data = msgspec.json.encode(event.data).decode() if event.data else ""
    return f"{head}\n       {data}" if data else head


def format_trail(trail: AuditTrail) -> str:
    """A heading naming the owner, then one entry per stored event, oldest first."""
    kind = f" ({trail.aggregate_type})" if trail.aggregate_type else ""
    shown = len(trail.events)
    count = f"{trail.total} events" if shown == trail.total else f"{shown} of {trail.total} events"
    lines = [f"aggregate {trail.aggregate_id}{kind}, owned by {trail.service}: {count}"]
    lines.extend(format_stored_event(event) for event in trail.events)
    return "\n".join(lines)


async def fetch_trail(
    nc: Client, service: ServiceToken, aggregate_id: str, *, timeout: float = 15.0
) -> AuditTrail:
    """The whole stored history of ``aggregate_id`` from ``service``, page by page.

    Raises:
        BusRequestError: The service answered an error (``not_found`` when it does not own it).
    """
    client = BusClient(nc)
    subject = service_query(service, "audit")
    events: list[StoredEvent] = []
    limit = PAGE
    while True:
        query = GetAuditTrail(
            principal=CLI_PRINCIPAL, aggregate_id=aggregate_id, limit=limit, offset=len(events)
        )
        try:
            page = await client.call(subject, query, AuditTrail, timeout=timeout)
        except BusRequestError as error:
            if error.code != "message_too_large" or limit == 1:
                raise
            limit = max(1, limit // 2)  # large events: ask for fewer at a time
            continue
        events.extend(page.events)
        if not page.events or len(events) >= page.total:
            return msgspec.structs.replace(page, events=events)


async def run_audit(
    env: Mapping[str, str], aggregate_id: str, out: TextIO | None = None, *, as_json: bool = False
) -> int:
    """Ask every service for ``aggregate_id``'s history and print the owner's.

    Returns:
        0 when a service holds it, 1 when none does (services that failed are named on stderr).
    """
    out = sys.stdout if out is None else out
    nc = await connect_cli(login_from_env(env))
    try:
        answers = await asyncio.gather(
            *(fetch_trail(nc, token, aggregate_id) for token in SERVICES), return_exceptions=True
        )
    finally:
        await nc.close()
    found = False
    for token, answer in zip(SERVICES, answers, strict=True):
        if isinstance(answer, AuditTrail):
            found = True
            text = msgspec.json.encode(answer).decode() if as_json else format_trail(answer)
            print(text, file=out, flush=True)
        elif isinstance(answer, BusRequestError):
            if answer.code != "not_found":
                print(f"clipyard audit: {token}: {answer.code}: {answer}", file=sys.stderr)
        elif isinstance(answer, BaseException):
            raise answer
    if not found:
        print(f"no service holds an aggregate {aggregate_id}", file=sys.stderr)
    return 0 if found else 1
