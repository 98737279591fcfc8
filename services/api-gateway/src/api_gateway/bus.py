"""The real bus port: requests through ``natsbus.BusClient``, micro pings, the event stream."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from api_gateway.dependencies import Ping, StreamedEvent
from contracts.base import Accepted, ErrorReply, Ok
from contracts.subjects import EVENT_STREAM, EVENT_STREAM_SUBJECTS
from natsbus import BusClient

__all__ = ["NatsBus"]


class _PingReply(msgspec.Struct):
    """The part of a ``nats.micro`` ping response the gateway reads."""

    name: str = ""
    version: str | None = None


_PING_DECODER = msgspec.json.Decoder(_PingReply)


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
        """Follow ``WS_EVENTS`` with an ephemeral ordered consumer (``ws.evt.>``)."""
        if after_sequence is None:
            config = ConsumerConfig(deliver_policy=DeliverPolicy.NEW)
        else:
            config = ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=after_sequence + 1
            )
        sub = await self._js.subscribe(
            EVENT_STREAM_SUBJECTS, stream=EVENT_STREAM, ordered_consumer=True, config=config
        )
        try:
            async for msg in sub.messages:
                yield StreamedEvent(msg.metadata.sequence.stream, msg.subject, msg.data)
        finally:
            await sub.unsubscribe()
