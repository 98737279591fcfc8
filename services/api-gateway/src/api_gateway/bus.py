"""The real bus port: requests through ``natsbus.BusClient``, micro pings, the event stream."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from api_gateway.dependencies import Ping, StreamedEvent
from contracts.base import Accepted, ErrorReply, Ok
from contracts.subjects import EVENT_STREAM, EVENT_STREAM_SUBJECTS
from natsbus import BusClient

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
_PULL_BATCH = 256


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
            RuntimeError: Events were lost on the way (a consumer sequence gap); the client
                resumes with ``Last-Event-ID``.
        """
        name = f"{SSE_CONSUMER_PREFIX}{uuid.uuid4().hex}"
        if after_sequence is None:
            start = ConsumerConfig(deliver_policy=DeliverPolicy.NEW)
        else:
            start = ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=after_sequence + 1
            )
        config = start.evolve(
            name=name,
            ack_policy=AckPolicy.NONE,
            filter_subject=EVENT_STREAM_SUBJECTS,
            inactive_threshold=_INACTIVE_THRESHOLD,
            mem_storage=True,
            num_replicas=1,
        )
        await self._js.add_consumer(EVENT_STREAM, config)
        try:
            sub = await self._js.pull_subscribe_bind(name, stream=EVENT_STREAM)
            try:
                delivered = 0
                while True:
                    try:
                        msgs = await sub.fetch(_PULL_BATCH, timeout=_PULL_WAIT)
                    except TimeoutError:
                        continue
                    for msg in msgs:
                        meta = msg.metadata
                        if meta.sequence.consumer != delivered + 1:
                            raise RuntimeError(
                                f"event stream gap: consumer sequence {meta.sequence.consumer} "
                                f"after {delivered}"
                            )
                        delivered = meta.sequence.consumer
                        yield StreamedEvent(meta.sequence.stream, msg.subject, msg.data)
            finally:
                await sub.unsubscribe()
        finally:
            with contextlib.suppress(Exception):  # gone already; inactivity removes it anyway
                await self._js.delete_consumer(EVENT_STREAM, name)
