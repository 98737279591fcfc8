"""The real bus port: requests through ``natsbus.BusClient``, micro pings, the event stream."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from nats.aio.client import Client
from nats.js import JetStreamContext

from api_gateway.http.dependencies import Ping, StreamedEvent
from contracts.base import Accepted, ErrorReply, Ok
from natsbus import BusClient
from natsbus.tail import StreamTail

__all__ = ["SSE_CONSUMER_PREFIX", "NatsBus"]


class _PingReply(msgspec.Struct):
    """The part of a ``nats.micro`` ping response the gateway reads."""

    name: str = ""
    version: str | None = None


_PING_DECODER = msgspec.json.Decoder(_PingReply)

SSE_CONSUMER_PREFIX = "gw-sse-"
"""Names of the gateway's SSE consumers; nats.conf lets user ``gateway`` touch only these."""
_INACTIVE_THRESHOLD = 30.0
"""Seconds after which the server deletes an SSE consumer nobody pulls from (a crashed gateway)."""
_PULL_WAIT = 5.0
"""Seconds one pull request waits for new events before the next one is sent."""


class NatsBus:
    """The gateway's bus port over one NATS connection."""

    def __init__(self, nc: Client, js: JetStreamContext, client: BusClient) -> None:
        """Use ``nc`` for pings, ``js`` for the event stream and ``client`` for requests."""
        self._nc = nc
        self._js = js
        self._client = client

    @property
    def connected(self) -> bool:
        """Whether the NATS connection is up."""
        return bool(self._nc.is_connected)

    async def request(
        self, subject: str, message: Any, *, timeout: float
    ) -> Ok | ErrorReply | Accepted:
        """Send a request; remote failures come back as ``error`` replies."""
        return await self._client.request(subject, message, timeout=timeout)

    async def ping(self, service_name: str, *, timeout: float) -> Ping:
        """Ping ``$SRV.PING.<service_name>`` and measure the round trip."""
        started = time.perf_counter()
        msg = await self._nc.request(f"$SRV.PING.{service_name}", b"", timeout=timeout)
        latency_ms = (time.perf_counter() - started) * 1000
        try:
            version = _PING_DECODER.decode(msg.data).version
        except msgspec.DecodeError:
            version = None
        return Ping(version=version, latency_ms=round(latency_ms, 3))

    async def events(self, *, after_sequence: int | None) -> AsyncIterator[StreamedEvent]:
        """Follow ``WS_EVENTS`` (``ws.evt.>``) with a named ephemeral pull consumer, in order.

        The consumer is ``gw-sse-<uuid>``, created through the named consumer API (the only one
        nats.conf grants the gateway), acknowledges nothing, and is deleted when the iteration
        ends (else the server drops it after ``_INACTIVE_THRESHOLD`` seconds without pulls).

        Raises:
            natsbus.tail.StreamGapError: Events were lost on the way (a consumer sequence gap);
                the client resumes with ``Last-Event-ID``.
        """
        tail = StreamTail(
            self._js,
            prefix=SSE_CONSUMER_PREFIX,
            after_sequence=after_sequence,
            inactive_threshold=_INACTIVE_THRESHOLD,
            pull_wait=_PULL_WAIT,
        )
        async with tail:
            async for message in tail:
                yield StreamedEvent(message.sequence, message.subject, message.data)
