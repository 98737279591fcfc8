"""``GET /api/companies/{companyId}/events/stream``: the company's events as Server-Sent Events.

A named ephemeral consumer (``api_gateway.adapters.bus``) follows ``WS_EVENTS`` (``ws.evt.>``); only events
whose envelope names the company pass (and, with ``?types=``, only the types it names: types,
types without version, aggregates; :mod:`contracts.event_filters`). Each SSE message
carries the stream sequence as ``id:``, so a reconnecting client resumes with ``Last-Event-ID``. A
client that was sent nothing for ``sse_keepalive`` seconds gets a keep-alive comment (however busy
other companies are). The key or session the stream was opened with is checked again every
``sse_auth_recheck`` seconds (at most 1 s): once revoked, ended or expired, the stream ends. It also
ends when the gateway stops.

Who may read it is the access model's (ARCHITECTURE §5.1): the admin key (any company), a board key
or board session (its own). Agent keys and run tokens are refused with 403 ``forbidden`` before the
stream opens: it carries every issue's events, so the refusal names what an agent reads instead
(its run and its log, its issue's heartbeat context, its workspace's events; the guard's
``RESOURCE_HINTS`` in ``api_gateway.http.security``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Annotated, Any, Final

import msgspec
from litestar import Controller, Request, get
from litestar.di import NamedDependency
from litestar.params import FromPath, HeaderParameter, QueryParameter
from litestar.response import ServerSentEvent, ServerSentEventMessage

from api_gateway.controllers.common import error_responses
from api_gateway.domain import GatewayError
from api_gateway.http.dependencies import Gateway, StreamedEvent
from api_gateway.http.security import Credential, access, authenticate, check_company
from contracts.base import Principal
from contracts.errors import CodedError, ErrorCode
from contracts.event_filters import EventFilter, UnknownEventFilterError, parse_event_filter
from contracts.event_types import PUBLIC_EVENT_TYPES
from servicekit.access import Access, Action, Resource

__all__ = [
    "EVENT_TYPES",
    "MAX_SEQUENCE",
    "EventStreamController",
    "company_events",
    "parse_last_event_id",
    "parse_types",
]

log = logging.getLogger(__name__)

EVENT_TYPES: Final[frozenset[str]] = PUBLIC_EVENT_TYPES
"""Every public event type (``company.created.v1`` ...): what a ``?types=`` filter may name
(each, without its version, or its aggregate)."""


class _Envelope(msgspec.Struct, rename="camel"):
    """The part of an event the stream filters on."""

    type: str
    company_id: str | None = None


_ENVELOPE: Final = msgspec.json.Decoder(_Envelope)
_END: Final = object()

MAX_SEQUENCE: Final = 2**63 - 1
"""The largest ``Last-Event-ID`` accepted (JetStream sequences are 64-bit; this leaves room)."""


class InvalidFilterError(GatewayError):
    """A filter names something that does not exist."""

    code = ErrorCode.VALIDATION_FAILED


def parse_types(
    types: str | list[str] | None, vocabulary: Collection[str] = EVENT_TYPES
) -> EventFilter | None:
    """The ``?types=`` filter (None: every type): comma lists of types (``run.queued.v1``),
    types without version (``run.queued``) and aggregates (``run``), the one filter of the CLI
    and the API (:mod:`contracts.event_filters`); anything else answers 400, saying what is
    accepted."""
    try:
        return parse_event_filter(types, vocabulary, name="?types=")
    except UnknownEventFilterError as exc:
        raise InvalidFilterError(
            str(exc),
            fields=[
                {"field": "types", "message": f"unknown: {list(exc.unknown)}", "source": "query"}
            ],
        ) from exc


def parse_last_event_id(value: str | None) -> int | None:
    """The stream sequence to resume after (``Last-Event-ID``); not a sequence answers 400.

    Only ASCII digits count (``str.isdigit`` also accepts ``²``, which ``int`` refuses), and the
    sequence is at most :data:`MAX_SEQUENCE`, so a value that passes cannot break the stream
    after its 200 has been sent.
    """
    if value is None:
        return None
    digits = value.strip()
    if not (digits.isascii() and digits.isdigit()) or len(digits) > len(str(MAX_SEQUENCE)):
        sequence = None
    else:
        sequence = int(digits)
    if sequence is None or sequence > MAX_SEQUENCE:
        raise InvalidFilterError(
            f"Last-Event-ID {value!r} is not a stream sequence (0 to {MAX_SEQUENCE}); "
            "send the id: of the last event seen.",
            fields=[{"field": "Last-Event-ID", "message": "not a sequence", "source": "header"}],
        )
    return sequence


async def company_events(
    gateway: Gateway,
    company_id: str,
    types: EventFilter | None,
    after: int | None,
    *,
    recheck: Callable[[], Awaitable[Any]],
) -> AsyncIterator[ServerSentEventMessage]:
    """The SSE messages of one company, with keep-alive comments, while the client may see them.

    Args:
        gateway: The gateway (bus, settings, the stopping flag).
        company_id: Only events naming this company pass.
        types: Only the event types this filter passes (None: all).
        after: Resume after this stream sequence (None: new events only).
        recheck: Called every ``sse_auth_recheck`` seconds; raising (``UnauthenticatedError``,
            a 404 for a company no longer visible, a 403, anything) ends the stream.

    Yields:
        A ``connected`` comment with the retry hint, then the company's events; a keep-alive
        comment whenever ``sse_keepalive`` seconds passed without a write to this client.
    """
    settings = gateway.settings
    keepalive, every = settings.sse_keepalive, min(settings.sse_auth_recheck, 1.0)
    queue: asyncio.Queue[StreamedEvent | object] = asyncio.Queue(maxsize=256)

    async def pump() -> None:
        try:
            async for one in gateway.bus.events(after_sequence=after):
                await queue.put(one)
        except Exception:  # the stream ends; the client reconnects with Last-Event-ID
            log.warning("event stream failed", exc_info=True)
        await queue.put(_END)

    loop = asyncio.get_running_loop()
    pumping = asyncio.create_task(pump())
    stopping = asyncio.ensure_future(gateway.stopping.wait())
    getting: asyncio.Future[StreamedEvent | object] | None = None
    try:
        yield ServerSentEventMessage(comment="connected", retry=2000, data=None)
        last_write = next_check = loop.time()
        next_check += every
        while True:
            if getting is None:
                getting = asyncio.ensure_future(queue.get())
            timeout = max(0.0, min(last_write + keepalive, next_check) - loop.time())
            waiting: set[asyncio.Future[Any]] = {getting, stopping}
            done, _ = await asyncio.wait(
                waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if stopping in done:
                return
            if getting in done:
                item, getting = getting.result(), None
                if not isinstance(item, StreamedEvent):
                    return
                if message := _message(item, company_id, types):
                    yield message
                    last_write = loop.time()
            if loop.time() >= next_check:
                if reason := await _refused(recheck):
                    yield ServerSentEventMessage(comment=f"closed: {reason}", data=None)
                    return
                next_check = loop.time() + every
            if loop.time() >= last_write + keepalive:
                yield ServerSentEventMessage(comment="keep-alive", data=None)
                last_write = loop.time()
    finally:
        leftovers: list[asyncio.Future[Any]] = [pumping, stopping]
        if getting is not None:
            leftovers.append(getting)
        for task in leftovers:
            task.cancel()
        await asyncio.gather(*leftovers, return_exceptions=True)


async def _refused(recheck: Callable[[], Awaitable[Any]]) -> str | None:
    """Why the stream's client may no longer see it (None: it still may)."""
    try:
        await recheck()
    except CodedError as exc:
        return str(exc)
    except Exception:  # fail closed: a check that cannot run does not keep a stream open
        log.warning("the event stream's credential check failed", exc_info=True)
        return "the credential could not be checked; reconnect"
    return None


def _message(
    item: StreamedEvent, company_id: str, types: EventFilter | None
) -> ServerSentEventMessage | None:
    try:
        envelope = _ENVELOPE.decode(item.data)
    except msgspec.DecodeError:
        return None
    if envelope.company_id != company_id or (
        types is not None and not types.matches(envelope.type)
    ):
        return None
    return ServerSentEventMessage(id=item.sequence, event=envelope.type, data=item.data.decode())


class EventStreamController(Controller):
    """Live events of a company."""

    path = "/api/companies"
    tags = ["events"]

    @get(
        "/{company_id:str}/events/stream",
        operation_id="streamCompanyEvents",
        opt=access(Resource.EVENT_STREAM, Action.READ),
        responses=error_responses("forbidden", "not_found"),
    )
    async def stream_events(
        self,
        company_id: FromPath[str],
        request: Request[Any, Any, Any],
        gateway: NamedDependency[Gateway],
        principal: NamedDependency[Principal],
        types: Annotated[
            str | None,
            QueryParameter(
                description="Comma list of event types (company.created.v1), types without "
                "version (company.created) or aggregates (run: every run.* type)."
            ),
        ] = None,
        last_event_id: Annotated[
            str | None,
            HeaderParameter(name="Last-Event-ID", description="Resume after this stream sequence."),
        ] = None,
    ) -> ServerSentEvent:
        """Stream the company's events as ``text/event-stream`` (``id:`` is the stream sequence).

        The stream ends within a second of its key being revoked or its session ending or
        expiring (a last comment says why); reconnecting then answers 401. The admin key and
        board keys and sessions may read it; agent keys and run tokens may not (it carries every
        issue's events): they read ``GET /api/runs/{runId}``, ``/api/runs/{runId}/log``,
        ``/api/issues/{issueId}/heartbeat-context`` and ``/api/execution-workspaces/{id}/events``.

        ``?types=`` takes event types, types without version and aggregates (``?types=run``),
        the filter of ``clipyard events tail --type``.

        Errors: 400 ``validation_failed`` (unknown ``types``, bad ``Last-Event-ID``); 401
        ``unauthenticated``; 403 ``forbidden`` (an agent key or run token: the message says
        what to read instead); 404 ``not_found``.
        """
        check_company(principal, company_id)
        gateway.lookup(gateway.application.company, company_id)
        wanted, after = parse_types(types), parse_last_event_id(last_event_id)
        credential = Credential.of(request)

        async def recheck() -> None:
            again = await authenticate(gateway, credential)
            Access.of(again).reach(Resource.EVENT_STREAM, Action.READ)
            check_company(again, company_id)

        return ServerSentEvent(company_events(gateway, company_id, wanted, after, recheck=recheck))
