"""``GET /api/companies/{companyId}/events/stream``: the company's events as Server-Sent Events.

An ephemeral ordered consumer follows ``WS_EVENTS`` (``ws.evt.>``); only events whose envelope
names the company pass (and, with ``?types=``, only those types). Each SSE message carries the
stream sequence as ``id:``, so a reconnecting client resumes with ``Last-Event-ID``. An idle stream
gets a keep-alive comment; the stream ends when the gateway stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Final

import msgspec
from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromPath, HeaderParameter, QueryParameter
from litestar.response import ServerSentEvent, ServerSentEventMessage

from api_gateway.controllers.common import error_responses
from api_gateway.dependencies import Gateway, StreamedEvent
from api_gateway.domain import GatewayError
from api_gateway.security import check_company
from contracts.base import Principal
from contracts.events import ALL_EVENT_TYPES

__all__ = [
    "EVENT_TYPES",
    "EventStreamController",
    "company_events",
    "parse_last_event_id",
    "parse_types",
]

log = logging.getLogger(__name__)

EVENT_TYPES: Final[frozenset[str]] = frozenset(
    tag for t in ALL_EVENT_TYPES if isinstance(tag := t.__struct_config__.tag, str)
)
"""Every public event type (``company.created.v1`` ...) a ``?types=`` filter may name."""


class _Envelope(msgspec.Struct, rename="camel"):
    """The part of an event the stream filters on."""

    type: str
    company_id: str | None = None


_ENVELOPE: Final = msgspec.json.Decoder(_Envelope)
_END: Final = object()


class InvalidFilterError(GatewayError):
    """A filter names something that does not exist."""

    code = "validation_failed"
    status = 400


def parse_types(types: str | None) -> frozenset[str] | None:
    """The ``?types=`` comma list as a set (None: every type); unknown types answer 400."""
    if types is None:
        return None
    wanted = frozenset(one.strip() for one in types.split(",") if one.strip())
    if unknown := sorted(wanted - EVENT_TYPES):
        raise InvalidFilterError(
            f"Unknown event types in ?types=: {', '.join(unknown)}; "
            f"use some of {', '.join(sorted(EVENT_TYPES))}.",
            fields=[{"field": "types", "message": f"unknown: {unknown}", "source": "query"}],
        )
    return wanted


def parse_last_event_id(value: str | None) -> int | None:
    """The stream sequence to resume after (``Last-Event-ID``); not a sequence answers 400."""
    if value is None:
        return None
    if not value.strip().isdigit():
        raise InvalidFilterError(
            f"Last-Event-ID {value!r} is not a stream sequence; send the id: of the last event seen.",
            fields=[{"field": "Last-Event-ID", "message": "not a sequence", "source": "header"}],
        )
    return int(value)


async def company_events(
    gateway: Gateway,
    company_id: str,
    types: frozenset[str] | None,
    after: int | None,
) -> AsyncIterator[ServerSentEventMessage]:
    """The SSE messages of one company, with keep-alive comments, until the gateway stops."""
    queue: asyncio.Queue[StreamedEvent | object] = asyncio.Queue(maxsize=256)

    async def pump() -> None:
        try:
            async for one in gateway.bus.events(after_sequence=after):
                await queue.put(one)
        except Exception:  # the stream ends; the client reconnects with Last-Event-ID
            log.warning("event stream failed", exc_info=True)
        await queue.put(_END)

    pumping = asyncio.create_task(pump())
    stopping = asyncio.ensure_future(gateway.stopping.wait())
    try:
        yield ServerSentEventMessage(comment="connected", retry=2000, data=None)
        while True:
            getting = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait(
                {getting, stopping},
                timeout=gateway.settings.sse_keepalive,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if getting not in done:
                getting.cancel()
                if stopping in done:
                    return
                yield ServerSentEventMessage(comment="keep-alive", data=None)
                continue
            item = getting.result()
            if not isinstance(item, StreamedEvent):
                return
            if message := _message(item, company_id, types):
                yield message
    finally:
        stopping.cancel()
        pumping.cancel()
        await asyncio.gather(pumping, stopping, return_exceptions=True)


def _message(
    item: StreamedEvent, company_id: str, types: frozenset[str] | None
) -> ServerSentEventMessage | None:
    try:
        envelope = _ENVELOPE.decode(item.data)
    except msgspec.DecodeError:
        return None
    if envelope.company_id != company_id or (types is not None and envelope.type not in types):
        return None
    return ServerSentEventMessage(id=item.sequence, event=envelope.type, data=item.data.decode())


class EventStreamController(Controller):
    """Live events of a company."""

    path = "/api/companies"
    tags = ["events"]

    @get(
        "/{company_id:str}/events/stream",
        operation_id="streamCompanyEvents",
        responses=error_responses("not_found"),
    )
    async def stream_events(
        self,
        company_id: FromPath[str],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        types: Annotated[
            str | None,
            QueryParameter(description="Comma list of event types, e.g. company.created.v1."),
        ] = None,
        last_event_id: Annotated[
            str | None,
            HeaderParameter(name="Last-Event-ID", description="Resume after this stream sequence."),
        ] = None,
    ) -> ServerSentEvent:
        """Stream the company's events as ``text/event-stream`` (``id:`` is the stream sequence).

        Errors: 400 ``validation_failed`` (unknown ``types``, bad ``Last-Event-ID``); 401
        ``unauthenticated``; 404 ``not_found``.
        """
        check_company(principal, company_id)
        await gateway.query(gateway.application.company, company_id)
        wanted, after = parse_types(types), parse_last_event_id(last_event_id)
        return ServerSentEvent(company_events(gateway, company_id, wanted, after))
