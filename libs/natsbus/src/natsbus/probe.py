"""The probe a waiting request sends every second: can its answer still come?

Asked at once (:func:`probe`): every instance of the subject's owning service, on
``$SRV.HELD.<service>`` (:mod:`natsbus.held`), whether it holds the request; and the subject
itself (its queue group: one instance answers) with the same question. The answer: ``held``,
``served`` (or it cannot tell), ``unserved`` (no responders), ``lost`` (every instance that
answers started after the request was sent and none holds it: a restart) or ``unheld`` (live
instances answer and none holds it: its holder is paused or cut off).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final, Literal

import nats.errors

from natsbus.context import HELD_HEADER, INSTANCE_STARTED_HEADER, PROBE_HEADER
from natsbus.held import HeldAnswer, ask_held
from natsbus.unanswered import service_of

if TYPE_CHECKING:
    from nats.aio.client import Client

__all__ = ["HELD_WAIT", "PROBE_TIMEOUT", "Probed", "probe"]

HELD_WAIT: Final = 0.3
"""Seconds a probe gathers the instances' answers about who holds a request."""
PROBE_TIMEOUT: Final = 1.0
"""Seconds the probe through the subject waits for its answer."""

Probed = Literal["served", "held", "unserved", "lost", "unheld"]


async def probe(nc: Client, subject: str, request_id: str, sent: int) -> Probed:
    """``served`` (or cannot tell), ``unserved`` (no responders), ``lost`` (the instances
    that answer started after the request was sent and none holds it) or ``unheld`` (none
    of the live instances holds it). Every instance of the owning service is asked at once
    (:mod:`natsbus.held`); one that answers nothing there is probed through the subject."""
    service = service_of(subject)
    asking = (
        None
        if service is None
        else asyncio.ensure_future(ask_held(nc, service, request_id, wait=HELD_WAIT))
    )
    try:
        through_subject = await _probe_subject(nc, subject, request_id, sent)
    finally:
        answers = await _held_answers(asking)
    if through_subject == "held" or any(answer.held for answer in answers):
        return "held"
    if through_subject == "lost":  # the subject's own instance restarted without it
        return "lost"
    if answers:
        return "lost" if all(a.started > sent for a in answers) else "unheld"
    return through_subject


async def _probe_subject(nc: Client, subject: str, request_id: str, sent: int) -> Probed:
    """The probe through ``subject`` itself (one instance of its queue group answers)."""
    try:
        answer = await nc.request(
            subject, b"", timeout=PROBE_TIMEOUT, headers={PROBE_HEADER: request_id}
        )
    except nats.errors.NoRespondersError:
        return "unserved"
    except (TimeoutError, nats.errors.Error):
        return "served"  # busy, or not ours to ask: the request's own timeout decides
    facts = answer.headers or {}
    started = facts.get(INSTANCE_STARTED_HEADER, "")
    restarted = started.isdigit() and int(started) > sent
    if facts.get(HELD_HEADER) == "1":
        return "held"
    return "lost" if restarted and facts.get(HELD_HEADER) == "0" else "served"


async def _held_answers(asking: asyncio.Future[list[HeldAnswer]] | None) -> list[HeldAnswer]:
    """The instances' answers, none when the question could not be asked (the connection
    failed or stalled: the probe through the subject decides alone, and no NATS error escapes)."""
    if asking is None:
        return []
    try:
        return await asking
    except (TimeoutError, nats.errors.Error, OSError):
        return []
