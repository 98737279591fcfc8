"""Request/reply endpoints served with ``nats.micro``, each request handled in its own task.

``nats.micro`` awaits an endpoint's handler inside the subscription's message loop, one message at
a time (library-notes): a slow handler would delay every later request on that endpoint. Here the
micro callback only starts a task and returns; a per-endpoint semaphore bounds how many handlers
run at once. Each task decodes the request with the endpoint's type, runs the handler inside a
CONSUMER span continued from the request headers, and answers with one reply of the ``kind`` union
(ARCHITECTURE §2): the handler's value as ``ok``, a returned reply as is, an exception through the
service's error mapper.

A request carrying ``Clipyard-Probe`` is not handled: any endpoint answers it at once, saying
whether this instance holds the request the probe names (by its ``Clipyard-Request-Id``, counted
from the moment its task starts to its end) and when this instance started, so that a requester
whose request died with an instance learns it from the instance's successor.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import UnionType
from typing import Any, Generic, TypeVar

import msgspec
from nats.aio.client import Client
from nats.micro.request import Request
from nats.micro.service import Service, ServiceConfig
from opentelemetry.trace import Span

from contracts.base import ErrorReply, Ok, Reply
from contracts.errors import ErrorCode
from natsbus.codec import decoder, encode
from natsbus.context import (
    HELD_HEADER,
    INSTANCE_STARTED_HEADER,
    PROBE_HEADER,
    REPLY_PREFIX,
    REQUEST_ID_HEADER,
    RequestContext,
    epoch_ms,
)
from natsbus.errors import ErrorMapper, default_error_mapper, error_reply, internal_error
from natsbus.held import serve_held
from natsbus.limits import MessageTooLargeError, check_size
from natsbus.tracing import annotate_reply
from telemetry.spans import consumer_span

__all__ = ["BusService", "Handler", "RequestContext"]

logger = logging.getLogger(__name__)

FLUSH_TIMEOUT = 5
"""Seconds an endpoint waits for the server to confirm its subscription."""

RequestT = TypeVar("RequestT")

Handler = Callable[[RequestT, RequestContext], Awaitable[Any]]
"""An endpoint handler: ``await handler(request, ctx)``; its value is the ``ok`` result."""


@dataclass(frozen=True)
class _Endpoint(Generic[RequestT]):
    name: str
    subject: str
    handler: Handler[RequestT]
    request_type: type[RequestT] | UnionType
    semaphore: asyncio.Semaphore


class BusService:
    """A ``nats.micro`` service whose endpoints hand every request to a bounded task.

    Build it with :meth:`start`, add endpoints with :meth:`add_endpoint`, and call :meth:`stop`
    before draining the connection. Micro's own ``$SRV.PING/INFO/STATS`` subjects answer
    discovery and ping.
    """

    def __init__(self, nc: Client, micro: Service, *, error_mapper: ErrorMapper) -> None:
        """Wrap a started micro service; use :meth:`start` instead."""
        self._nc = nc
        self._micro = micro
        self._error_mapper = error_mapper
        self._endpoints: dict[str, _Endpoint[Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._held: Counter[str] = Counter()
        """The request ids of the requests being handled (a probe asks about one)."""
        self._started = str(epoch_ms(time.time()))
        self._stopping = False

    @classmethod
    async def start(
        cls,
        nc: Client,
        *,
        name: str,
        version: str,
        description: str | None = None,
        metadata: dict[str, str] | None = None,
        error_mapper: ErrorMapper = default_error_mapper,
        announce: bool = True,
        stats: Callable[[str], object] | None = None,
    ) -> BusService:
        """Start a micro service on ``nc`` (no endpoints yet).

        Args:
            nc: The NATS connection.
            name: The service name (``[A-Za-z0-9_-]+``), shared by its replicas.
            version: The service version (semver).
            description: A line shown by ``$SRV.INFO``.
            metadata: Extra facts shown by ``$SRV.INFO``.
            error_mapper: Maps a handler's exception to its error reply.
            announce: Answer ``$SRV.PING/INFO/STATS`` at once; with ``False`` the service stays
                silent (its endpoints still serve) until :meth:`announce`, so whoever waits for
                its ping never finds it up with endpoints still missing.
            stats: ``stats(endpoint_name)``: the JSON-ready ``data`` that ``$SRV.STATS`` shows for
                that endpoint (None: none); called on the event loop, it must not raise.

        Returns:
            The started service.
        """
        config = ServiceConfig(
            name=name,
            version=version,
            description=description,
            metadata=metadata,
            stats_handler=None if stats is None else lambda endpoint: stats(endpoint.name),
        )
        service = cls(nc, Service(nc, config), error_mapper=error_mapper)
        await serve_held(nc, name, service._probe_answer)  # every instance: natsbus.held
        if announce:
            await service.announce()
        return service

    async def announce(self) -> None:
        """Answer ``$SRV.PING/INFO/STATS`` from now on (again a no-op once announced)."""
        await self._micro.start()

    @property
    def id(self) -> str:
        """This instance's micro id (as answered by ``$SRV.PING``)."""
        return self._micro.id

    @property
    def in_flight(self) -> int:
        """Requests received and not yet answered."""
        return len(self._tasks)

    async def add_endpoint(
        self,
        name: str,
        subject: str,
        handler: Handler[RequestT],
        request_type: type[RequestT] | UnionType,
        *,
        concurrency: int = 16,
    ) -> None:
        """Serve ``subject`` (queue-grouped) with ``handler``.

        Args:
            name: The endpoint name shown by ``$SRV.INFO`` (``[A-Za-z0-9_-]+``).
            subject: The subject served (built with ``contracts.subjects``).
            handler: ``await handler(request, ctx)``; its value is sent as ``ok``, a returned
                reply is sent as is, an exception goes through the error mapper.
            request_type: The type the request body is decoded into: a Struct, or a union of
                tagged Structs (``CreateIssue | UpdateIssue``) dispatched with ``match``.
            concurrency: How many requests of this endpoint may be handled at once.

        Raises:
            ValueError: A bad concurrency, a reused endpoint name, or a service that is stopping.
        """
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        if name in self._endpoints:
            raise ValueError(f"endpoint {name!r} already exists")
        if self._stopping:
            raise ValueError("the service is stopping")
        endpoint = _Endpoint(name, subject, handler, request_type, asyncio.Semaphore(concurrency))
        self._endpoints[name] = endpoint

        async def on_request(request: Request) -> None:
            # Never await the work here: micro awaits this inside the subscription loop.
            if request.headers and PROBE_HEADER in request.headers:
                reply_to = getattr(getattr(request, "_msg", None), "reply", "") or ""
                if reply_to.startswith(REPLY_PREFIX):  # as any reply: to an inbox only
                    # "someone serves this subject", and whether it is handling that request
                    await request.respond(b"", headers=self._probe_answer(request.headers))
                return
            if self._stopping:  # only while the connection drains under a stopped service
                await self._respond(request, _stopping_reply(request.subject))
                return
            self._spawn(endpoint, request)

        await self._micro.add_endpoint(name=name, subject=subject, handler=on_request)
        if self._nc.is_connected:  # served once this returns: the server has the subscription
            await self._nc.flush(timeout=FLUSH_TIMEOUT)

    @property
    def held(self) -> dict[str, int]:
        """The ids of the requests being handled, with how many tasks handle each."""
        return dict(self._held)

    def _probe_answer(self, headers: Mapping[str, str]) -> dict[str, str]:
        """The headers answering a probe: does this instance hold the request it names, and
        when did this instance start."""
        held = headers[PROBE_HEADER] in self._held
        return {HELD_HEADER: "1" if held else "0", INSTANCE_STARTED_HEADER: self._started}

    def _spawn(self, endpoint: _Endpoint[Any], request: Request) -> None:
        task = asyncio.create_task(self._serve(endpoint, request), name=f"bus:{endpoint.name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        request_id = (request.headers or {}).get(REQUEST_ID_HEADER)
        if request_id:  # held from now (a probe sent after the request comes after it) to done
            self._held[request_id] += 1
            task.add_done_callback(lambda _: self._let_go(request_id))

    def _let_go(self, request_id: str) -> None:
        """The request's task ended: it is held once less."""
        self._held[request_id] -= 1
        if self._held[request_id] <= 0:
            del self._held[request_id]

    async def _serve(self, endpoint: _Endpoint[Any], request: Request) -> None:
        ctx = RequestContext.from_message(request.subject, request.headers)
        try:
            with consumer_span(request.subject, ctx.headers, operation="process") as span:
                reply: Reply
                try:
                    async with endpoint.semaphore:
                        if ctx.expired():
                            # Queued past its deadline: the requester has its timeout already, and
                            # a retry may be on its way; running it now would do the work twice.
                            reply = _expired_reply(ctx)
                        else:
                            reply = await self._handle(endpoint, request.data, ctx)
                except Exception:
                    logger.exception("serving %s failed", ctx.subject)
                    reply = internal_error()
                await self._respond(request, reply, span)
        except asyncio.CancelledError:
            await self._respond(request, _stopping_reply(ctx.subject))
            raise

    async def _handle(self, endpoint: _Endpoint[Any], data: bytes, ctx: RequestContext) -> Reply:
        try:
            body = decoder(endpoint.request_type).decode(data)
        except msgspec.DecodeError as exc:
            return error_reply(ErrorCode.VALIDATION_FAILED, str(exc))
        try:
            result = await endpoint.handler(body, ctx)
        except Exception as exc:
            return self._map_error(exc, ctx)
        return result if isinstance(result, Reply) else Ok(result=result)

    def _map_error(self, exc: Exception, ctx: RequestContext) -> ErrorReply:
        try:
            reply = self._error_mapper(exc)
        except Exception:
            logger.exception("error mapper failed on %s", ctx.subject)
            reply = internal_error()
        if reply.status >= 500:
            logger.error("handler of %s failed", ctx.subject, exc_info=exc)
        else:
            logger.info("handler of %s answered %s: %s", ctx.subject, reply.code, reply.message)
        return reply

    async def _respond(self, request: Request, reply: Reply, span: Span | None = None) -> None:
        subject = request.subject
        try:
            data = encode(reply)
            check_size(subject, data)
        except MessageTooLargeError as exc:
            logger.error("reply on %s too large: %s", subject, exc)
            reply = error_reply(exc.code, str(exc), status=exc.status, details=exc.details)
            data = encode(reply)
        except (TypeError, msgspec.EncodeError, UnicodeEncodeError):
            # UnicodeEncodeError: a str holding lone surrogates (bytes decoded with
            # surrogateescape) that JSON cannot carry. The requester still gets an answer.
            logger.exception("reply on %s cannot be encoded", subject)
            reply = internal_error()
            data = encode(reply)
        if span is not None:
            annotate_reply(span, reply)
        reply_to = getattr(getattr(request, "_msg", None), "reply", "") or ""
        if reply_to and not reply_to.startswith(REPLY_PREFIX):
            # A requester chose where the answer goes. Only reply inboxes are answered, so no
            # one can make a service publish its reply onto an event, command or API subject
            # that the service itself may publish to.
            logger.warning("request on %s asked for a reply on %r; refused", subject, reply_to)
            return
        try:
            await request.respond(data)
        except ValueError:
            logger.debug("request on %s had no reply subject; reply dropped", subject)
        except Exception:
            logger.exception("could not send the reply on %s", subject)

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop taking requests, then wait up to ``timeout`` for the ones in flight.

        Endpoints are unsubscribed first (so the connection can be drained afterwards); handlers
        still running after ``timeout`` are cancelled and answer ``service_unavailable``.

        Args:
            timeout: Seconds to wait for in-flight handlers.
        """
        if self._stopping:
            return
        self._stopping = True
        if not (self._nc.is_closed or self._nc.is_draining):
            try:
                await self._micro.stop()
            except Exception:
                logger.exception("stopping the micro service failed")
        pending = set(self._tasks)
        if pending:
            _, pending = await asyncio.wait(pending, timeout=timeout)
        if pending:
            logger.warning(
                "cancelling %d request(s) still running after %g s", len(pending), timeout
            )
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def __aenter__(self) -> BusService:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


def _expired_reply(ctx: RequestContext) -> ErrorReply:
    logger.warning("request on %s waited past its deadline; not run", ctx.subject)
    return error_reply(
        ErrorCode.TIMEOUT,
        "The service was too busy to start this request before its deadline; nothing was done. "
        "Retry it.",
        details={"subject": ctx.subject},
    )


def _stopping_reply(subject: str) -> ErrorReply:
    return error_reply(
        ErrorCode.SERVICE_UNAVAILABLE, f"the service stopped while handling {subject}"
    )
