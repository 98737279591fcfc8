"""Every live instance of a micro service, not only the first to answer.

``$SRV.PING.<name>`` is answered by each instance of the service; a plain request keeps the
first answer. :func:`ping_instances` publishes the ping with its own reply inbox and gathers
every answer that comes within ``wait`` seconds (instances answer in milliseconds; the wait only
bounds a slow one). Each Clipyard instance puts its instance id and node in its micro metadata
(``instance``, ``node``), which is how replicas tell each other apart.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg

__all__ = ["INSTANCE_METADATA", "InstancePing", "ping_instances"]

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


async def ping_instances(nc: Client, name: str, *, wait: float = 0.5) -> list[InstancePing]:
    """Every instance of service ``name`` that answers within ``wait`` seconds.

    Returns:
        The answers, in arrival order (empty when none answers or the connection is down).
    """
    if not nc.is_connected:
        return []
    answers: list[InstancePing] = []
    inbox = nc.new_inbox()

    async def collect(msg: Msg) -> None:
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            answers.append(msgspec.json.decode(msg.data, type=InstancePing))

    sub = await nc.subscribe(inbox, cb=collect)
    try:
        await nc.publish(f"$SRV.PING.{name}", b"", reply=inbox)
        await nc.flush(timeout=max(wait, 0.1))
        await asyncio.sleep(wait)  # every answer that comes in time is collected meanwhile
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return answers
