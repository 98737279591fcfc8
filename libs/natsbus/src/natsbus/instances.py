"""Every live instance of a micro service, not only the first to answer.

``$SRV.PING.<name>`` (and ``$SRV.STATS.<name>``, ``$SRV.INFO.<name>``) is answered by each instance
of the service; a plain request keeps the first answer. :func:`gather_answers` publishes a request
with its own reply inbox and gathers every answer that comes within ``wait`` seconds (instances
answer in milliseconds; the wait only bounds a slow one), each with how long it took;
:func:`ping_instances` does so for the pings. Each Clipyard instance puts its instance id and node
in its micro metadata (``instance``, ``node``), which is how replicas tell each other apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg

__all__ = ["INSTANCE_METADATA", "Answer", "InstancePing", "gather_answers", "ping_instances"]

INSTANCE_METADATA = "instance"
"""The micro metadata key naming an instance (``CLIPYARD_INSTANCE_ID``)."""


class InstancePing(msgspec.Struct, frozen=True):
    """One instance's ping answer (``io.nats.micro.v1.ping_response``)."""

    name: str
    id: str
    version: str
    metadata: dict[str, str] = msgspec.field(default_factory=dict)

    @property
    def instance(self) -> str:
        """Its instance id (its micro id when it names none)."""
        return self.metadata.get(INSTANCE_METADATA) or self.id


class Answer(msgspec.Struct, frozen=True):
    """One answer gathered by :func:`gather_answers`: its payload and its round-trip time."""

    data: bytes
    latency_ms: float
    headers: dict[str, str] = msgspec.field(default_factory=dict)


async def gather_answers(
    nc: Client, subject: str, *, wait: float = 0.5, headers: dict[str, str] | None = None
) -> list[Answer]:
    """Every answer to one empty request on ``subject`` (with ``headers``) that comes within
    ``wait`` seconds.

    Returns:
        The answers, in arrival order (empty when none answers or the connection is down).
    """
    if not nc.is_connected:
        return []
    answers: list[Answer] = []
    inbox = nc.new_inbox()
    started = time.perf_counter()

    async def collect(msg: Msg) -> None:
        if msg.headers and msg.headers.get("Status") and not msg.data:
            return  # the server's "no responders" (503), not an instance's answer
        took = (time.perf_counter() - started) * 1000.0
        answers.append(
            Answer(data=msg.data, latency_ms=round(took, 2), headers=dict(msg.headers or {}))
        )

    sub = await nc.subscribe(inbox, cb=collect)
    try:
        started = time.perf_counter()
        await nc.publish(subject, b"", reply=inbox, headers=headers)
        await nc.flush(timeout=max(math.ceil(wait), 1))  # whole seconds (nats-py's type)
        await asyncio.sleep(wait)  # every answer that comes in time is collected meanwhile
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return answers


async def ping_instances(nc: Client, name: str, *, wait: float = 0.5) -> list[InstancePing]:
    """Every instance of service ``name`` that answers within ``wait`` seconds.

    Returns:
        The answers, in arrival order (empty when none answers or the connection is down).
    """
    pings: list[InstancePing] = []
    for answer in await gather_answers(nc, f"$SRV.PING.{name}", wait=wait):
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            pings.append(msgspec.json.decode(answer.data, type=InstancePing))
    return pings
