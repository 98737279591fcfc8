"""Following the event stream in order on a real server: from the start, after a sequence, or
new events only; the reader's consumer is gone once the tail ends."""

from __future__ import annotations

import asyncio

import pytest
from nats.js.client import JetStreamContext

from contracts.subjects import EVENT_STREAM
from natsbus import ensure_event_stream, publish
from natsbus.tail import StreamTail, Tailed

pytestmark = pytest.mark.integration


async def _take(tail: StreamTail, count: int) -> list[Tailed]:
    taken: list[Tailed] = []
    async for message in tail:
        taken.append(message)
        if len(taken) == count:
            return taken
    return taken


async def test_a_tail_reads_in_order_from_where_it_is_told(
    js: JetStreamContext, token: str
) -> None:
    await ensure_event_stream(js)
    subject = f"ws.evt.{token}.happened"
    acks = [await publish(js, subject, f'{{"n": {n}}}'.encode()) for n in range(3)]

    async with StreamTail(js, prefix="t-", filter_subject=subject, from_start=True) as tail:
        assert tail.pending == 3
        taken = await asyncio.wait_for(_take(tail, 3), 10)
    assert [m.sequence for m in taken] == [a.seq for a in acks]
    assert [m.pending for m in taken] == [2, 1, 0]
    assert taken[0].data == b'{"n": 0}'

    async with StreamTail(js, prefix="t-", filter_subject=subject,
                          after_sequence=acks[0].seq) as resumed:  # fmt: skip
        assert [m.sequence for m in await asyncio.wait_for(_take(resumed, 2), 10)] == [
            acks[1].seq,
            acks[2].seq,
        ]

    async with StreamTail(js, prefix="t-", filter_subject=subject, pull_wait=0.1) as new_only:
        assert new_only.pending == 0
        later = await publish(js, subject, b'{"n": 3}')
        (message,) = await asyncio.wait_for(_take(new_only, 1), 10)
        assert message.sequence == later.seq
        name = new_only.name
    assert name.startswith("t-")
    consumers = [info.name for info in await js.consumers_info(EVENT_STREAM)]
    assert name not in consumers  # deleted when the tail ended
