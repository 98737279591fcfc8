"""Who holds a request: asked of every instance of a service at once.

A request goes to one instance of its service's queue group. While it waits, the requester
probes (:mod:`natsbus.client`): the queue-grouped probe on the request's own subject reaches one
instance too, maybe not the one handling it. With replicas, an instance that holds a request and
then stops answering (paused by SIGSTOP, cut off from the network, its loop stuck) keeps its NATS
connection for minutes, and the request would wait for its whole timeout. So every
:class:`~natsbus.service.BusService` also answers ``$SRV.HELD.<service>`` (:func:`held_subject`,
a plain subscription: every instance answers) with the same facts as the probe (whether it holds
the request named in :data:`~natsbus.context.PROBE_HEADER`, when it started), and the requester
asks them all (:func:`ask_held`): if none of those answering holds it, round after round, its
holder is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from natsbus.context import HELD_HEADER, INSTANCE_STARTED_HEADER, PROBE_HEADER, REPLY_PREFIX
from natsbus.instances import gather_answers

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.aio.subscription import Subscription

__all__ = ["HeldAnswer", "ask_held", "held_subject", "serve_held"]


def held_subject(service: str) -> str:
    """``$SRV.HELD.<service>``: micro's namespace, which every service may serve for its name."""
    return f"$SRV.HELD.{service}"


async def serve_held(
    nc: Client, service: str, answer: Callable[[Mapping[str, str]], dict[str, str]]
) -> Subscription:
    """Answer ``$SRV.HELD.<service>`` with ``answer(headers)`` (the probe's facts), to reply
    inboxes only."""

    async def on_msg(msg: Msg) -> None:
        headers = msg.headers or {}
        if PROBE_HEADER in headers and (msg.reply or "").startswith(REPLY_PREFIX):
            await nc.publish(msg.reply, b"", headers=answer(headers))

    return await nc.subscribe(held_subject(service), cb=on_msg)


class HeldAnswer:
    """One instance's answer: whether it holds the request, and when it started (ms)."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self.held = headers.get(HELD_HEADER) == "1"
        started = headers.get(INSTANCE_STARTED_HEADER, "")
        self.started = int(started) if started.isdigit() else 0


async def ask_held(nc: Client, service: str, request_id: str, *, wait: float) -> list[HeldAnswer]:
    """Every live instance's answer about ``request_id``, gathered for ``wait`` seconds."""
    answers = await gather_answers(
        nc, held_subject(service), wait=wait, headers={PROBE_HEADER: request_id}
    )
    return [HeldAnswer(answer.headers) for answer in answers]
