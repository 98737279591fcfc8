"""Typed requests over the bus: one reply of the ``kind`` union, never a NATS exception.

:meth:`BusClient.request` turns every remote failure into an ``error`` reply (a timeout is
``timeout``; no responders, or a connection that is closed, draining or over its buffer, is
``service_unavailable``), so callers handle exactly three outcomes. Those messages reach HTTP
clients through the gateway: they name the service (from the subject's owner) and the next step,
never the subject, which is in ``details``.
:meth:`BusClient.call` is the shortcut for callers that only want the result: it raises
:class:`BusRequestError` or :class:`OperationAccepted` for the other two.

Failures are answered fast: a request is not sent while the connection is down (it would wait in
the reconnect buffer until its timeout), and a pending one is answered 503 within about a second
of its connection dropping, some seconds after the subject lost its last server, or within about
a second when the instance that had it was restarted (it carries ``Clipyard-Request-Id``; every
second while it waits, a probe on its subject asks whether the answering instance holds it and
when that instance started), rather than at its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import msgspec
import nats.errors
from nats.aio.client import Client
from nats.micro.request import ERROR_CODE_HEADER, ERROR_HEADER
from opentelemetry import trace

from contracts.base import Accepted, ErrorReply, Ok, Reply
from natsbus.codec import decode, decode_reply, encode
from natsbus.context import (
    DEADLINE_HEADER,
    DEFAULT_REQUEST_TIMEOUT,
    REQUEST_ID_HEADER,
    deadline_header,
    epoch_ms,
)
from natsbus.limits import check_size
from natsbus.probe import probe
from natsbus.tracing import annotate_reply
from natsbus.unanswered import bad_reply, service_of, timed_out, unavailable
from telemetry.spans import producer_span

__all__ = [
    "UNSERVED_FOR",
    "WATCH_EVERY",
    "BusClient",
    "BusRequestError",
    "OperationAccepted",
    "service_of",
]

WATCH_EVERY: Final = 1.0
"""Seconds between the checks that a pending request can still be answered."""
UNSERVED_FOR: Final = 6.0
"""Seconds a subject must go unserved before its pending requests answer 503 (a graceful stop
waits up to 5 s for the handlers it still runs)."""

UNHELD_ROUNDS: Final = 3
"""Probes in a row in which no live instance of the service held the request (its holder was
paused or cut off with its connection still open), lasting :data:`UNSERVED_FOR` seconds at
least, before the request answers 503."""

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class BusRequestError(Exception):
    """A request answered with an ``error`` reply.

    It carries the reply's ``code``, ``status`` and ``details``, so a handler that lets it escape
    forwards the same error to its own requester through the default error mapper.
    """

    def __init__(self, subject: str, reply: ErrorReply) -> None:
        self.subject = subject
        self.reply = reply
        self.code = reply.code
        self.status = reply.status
        self.details = reply.details
        super().__init__(reply.message)


class OperationAccepted(Exception):
    """A request answered ``accepted``: the work goes on as operation ``operation_id``."""

    def __init__(self, subject: str, operation_id: str) -> None:
        self.subject = subject
        self.operation_id = operation_id
        super().__init__(f"{subject} goes on as operation {operation_id}")


class _RawOk(Reply, tag="ok", frozen=True, kw_only=True):
    """``ok`` with its result left undecoded, to decode it into the caller's type."""

    result: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b"null"))


_RawReply = _RawOk | ErrorReply | Accepted


class BusClient:
    """Sends requests on one NATS connection."""

    def __init__(self, nc: Client) -> None:
        """Use ``nc`` for every request."""
        self._nc = nc

    async def request(
        self,
        subject: str,
        message: Any,
        *,
        timeout: float = DEFAULT_REQUEST_TIMEOUT,
        headers: Mapping[str, str] | None = None,
    ) -> Ok | ErrorReply | Accepted:
        """Send ``message`` and wait for its reply.

        The request carries a PRODUCER span (its context injected in the headers) and its
        deadline (``Clipyard-Deadline``, now + ``timeout``).

        Args:
            subject: Where to send (built with ``contracts.subjects``).
            message: The request body: a Struct, or bytes already encoded.
            timeout: Seconds to wait for the reply.
            headers: Extra headers.

        Returns:
            The reply. A timeout becomes ``error`` ``timeout``/504, no responders or a
            connection that cannot send ``service_unavailable``/503 (both name the service and
            what to do; ``details`` has the subject), a malformed reply ``internal``/502.

        Raises:
            MessageTooLargeError: The message is over the bus limit; nothing was sent.
        """
        return await self._exchange(subject, message, timeout, headers, _decode_public)

    async def call(
        self,
        subject: str,
        message: Any,
        result_type: type[T],
        *,
        timeout: float = DEFAULT_REQUEST_TIMEOUT,
        headers: Mapping[str, str] | None = None,
    ) -> T:
        """Send ``message`` and return the ``ok`` result decoded as ``result_type``.

        Args:
            subject: Where to send.
            message: The request body: a Struct, or bytes already encoded.
            result_type: The type of the ``ok`` result.
            timeout: Seconds to wait for the reply.
            headers: Extra headers.

        Returns:
            The result.

        Raises:
            BusRequestError: The reply was ``error`` (timeouts and no responders included), or
                the result did not decode as ``result_type`` (``internal``/502).
            OperationAccepted: The reply was ``accepted``.
            MessageTooLargeError: The message is over the bus limit; nothing was sent.
        """
        reply = await self._exchange(subject, message, timeout, headers, _decode_raw)
        match reply:
            case _RawOk(result=raw):
                try:
                    return decode(raw, result_type)
                except msgspec.DecodeError as exc:
                    bad = bad_reply(subject, f"result does not decode: {exc}")
                    raise BusRequestError(subject, bad) from exc
            case Accepted(operation_id=operation_id):
                raise OperationAccepted(subject, operation_id)
            case ErrorReply():
                raise BusRequestError(subject, reply)
        raise AssertionError(f"unexpected reply {reply!r}")  # pragma: no cover

    async def _exchange(
        self,
        subject: str,
        message: Any,
        timeout: float,
        headers: Mapping[str, str] | None,
        decode_as: Callable[[str, bytes], R | ErrorReply],
    ) -> R | ErrorReply:
        """Send a request in a PRODUCER span and decode its reply (outcome noted on the span)."""
        data = bytes(message) if isinstance(message, bytes | bytearray) else encode(message)
        with producer_span(subject, operation="send") as trace_headers:
            sent = {**(headers or {}), **trace_headers}
            sent[DEADLINE_HEADER] = deadline_header(time.time() + timeout)
            sent[REQUEST_ID_HEADER] = uuid.uuid4().hex
            check_size(subject, data, sent)
            answer = await self._send(subject, data, sent, timeout)
            reply = answer if isinstance(answer, ErrorReply) else decode_as(subject, answer)
            if isinstance(reply, ErrorReply):
                annotate_reply(trace.get_current_span(), reply)
        return reply

    async def _send(
        self, subject: str, data: bytes, headers: dict[str, str], timeout: float
    ) -> bytes | ErrorReply:
        if not self._nc.is_connected:  # a request would wait in the reconnect buffer
            return unavailable(
                subject, "cannot be reached (the bus connection is down)", delivered=False
            )
        pending = asyncio.ensure_future(
            self._nc.request(subject, data, timeout=timeout, headers=headers)
        )
        try:
            lost = await self._watch(subject, headers[REQUEST_ID_HEADER], pending)
        finally:
            if not pending.done():  # lost, or this caller was cancelled: nobody waits for it
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pending
        if lost is not None:
            return lost
        try:
            msg = pending.result()
        except nats.errors.NoRespondersError:
            return unavailable(subject, "is not answering", delivered=False)
        except TimeoutError:
            return timed_out(subject, timeout)
        except nats.errors.Error as exc:
            # Closed, draining, reconnecting with a full buffer, stale: the request may or may
            # not have gone out before the connection failed (unlike the check above, made
            # before anything was sent), so the caller must look before sending it again.
            logger.warning("request on %s cut off: %r", subject, exc)
            return unavailable(
                subject,
                "could not be reached to the end (the bus connection failed; the request may "
                "still have completed, so look at the result before retrying)",
            )
        if msg.headers and ERROR_HEADER in msg.headers:
            code = msg.headers.get(ERROR_CODE_HEADER, "")
            return bad_reply(subject, f"service error {code}: {msg.headers[ERROR_HEADER]}")
        return msg.data

    async def _watch(
        self, subject: str, request_id: str, pending: asyncio.Future[Any]
    ) -> ErrorReply | None:
        """Wait for ``pending``; while it is not answered, look every :data:`WATCH_EVERY`
        seconds whether the answer can still come: the bus connection is up, the instance that
        answers a probe (:data:`PROBE_HEADER`) is not a restart that never received the request,
        and something has served ``subject`` within the last :data:`UNSERVED_FOR` seconds
        (longer than a service's graceful stop, whose last handlers still answer). Return the
        503 to answer when it cannot, else None once ``pending`` is done."""
        loop = asyncio.get_running_loop()
        sent = epoch_ms(time.time())
        served_at = held_at = loop.time()
        unheld = 0
        while not pending.done():
            await asyncio.wait({pending}, timeout=WATCH_EVERY)
            if pending.done():
                break
            if not self._nc.is_connected:
                return unavailable(
                    subject,
                    "cannot be reached (the bus connection was lost; "
                    "the request may still have completed)",
                )
            found = await probe(self._nc, subject, request_id, sent)
            await asyncio.sleep(0)  # an answer that came with the probe's is taken first
            if pending.done():
                break
            match found:
                case "lost":
                    return unavailable(
                        subject,
                        "restarted while handling this request (it "
                        "may have completed, so look at the result before "
                        "retrying)",
                    )
                case "unheld" if (unheld := unheld + 1) >= UNHELD_ROUNDS and (
                    loop.time() - held_at >= UNSERVED_FOR
                ):
                    return unavailable(
                        subject,
                        "stopped answering while handling this request (its instance may be "
                        "paused or cut off; the request may still complete, so look at the "
                        "result before retrying)",
                    )
                case "unheld":
                    served_at = loop.time()
                case "served" | "held":
                    unheld = 0
                    served_at = held_at = loop.time()
                case "unserved" if loop.time() - served_at >= UNSERVED_FOR:
                    return unavailable(
                        subject,
                        "stopped while handling this request (nothing "
                        "has served it for a while; it may still have completed, "
                        "so look at the result before retrying)",
                    )
        return None


def _decode_public(subject: str, data: bytes) -> Ok | ErrorReply | Accepted:
    try:
        return decode_reply(data)
    except msgspec.DecodeError as exc:
        return bad_reply(subject, f"malformed reply: {exc}")


def _decode_raw(subject: str, data: bytes) -> _RawOk | ErrorReply | Accepted:
    try:
        reply: _RawOk | ErrorReply | Accepted = decode(data, _RawReply)  # type: ignore[arg-type]
    except msgspec.DecodeError as exc:
        return bad_reply(subject, f"malformed reply: {exc}")
    return reply
