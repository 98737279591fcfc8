"""OrderedConsumer on a real JetStream: order, acks, retries, poison messages, stop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from nats.aio.msg import Msg
from nats.js.api import DeliverPolicy
from nats.js.client import JetStreamContext

from contracts.subjects import EVENT_STREAM
from natsbus import OrderedConsumer, PoisonMessage, ensure_event_stream, publish

pytestmark = pytest.mark.integration


async def eventually(check: Callable[[], bool], timeout: float = 15.0) -> None:
    """Wait until ``check()`` holds; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def nothing(msg: Msg, error: PoisonMessage) -> None:
    raise AssertionError(f"unexpected poison {msg.subject}: {error}")


def consumer(
    js: JetStreamContext,
    token: str,
    handler: Callable[[Msg], Awaitable[None]],
    on_poison: Callable[[Msg, PoisonMessage], Awaitable[None]] = nothing,
) -> OrderedConsumer:
    return OrderedConsumer(
        js,
        durable=f"inbox-{token}",
        filter_subjects=[f"ws.evt.{token}.a", f"ws.evt.{token}.b.>"],
        handler=handler,
        on_poison=on_poison,
        retry_delays=(0.05, 0.1),
        fetch_timeout=0.5,
    )


async def publish_all(js: JetStreamContext, token: str) -> None:
    """Six events: four match the filters, two (``.c``, ``.b``) do not."""
    for n, subject in enumerate(["a", "b.x", "c", "a", "b", "b.y.z"]):
        await publish(js, f"ws.evt.{token}.{subject}", f"{n}".encode())


async def test_delivers_in_order_and_acks(js: JetStreamContext, token: str) -> None:
    await ensure_event_stream(js)
    await publish_all(js, token)
    seen: list[tuple[str, bytes]] = []

    async def handle(msg: Msg) -> None:
        seen.append((msg.subject.removeprefix(f"ws.evt.{token}."), msg.data))

    bus = consumer(js, token, handle)
    info = await bus.start()
    try:
        assert info.config.max_ack_pending == 1
        assert sorted(info.config.filter_subjects or []) == [
            f"ws.evt.{token}.a",
            f"ws.evt.{token}.b.>",
        ]
        await eventually(lambda: len(seen) == 4)
        # A late event is handled too, after the others.
        await publish(js, f"ws.evt.{token}.a", b"6")
        await eventually(lambda: len(seen) == 5)
    finally:
        await bus.stop()
    assert seen == [("a", b"0"), ("b.x", b"1"), ("a", b"3"), ("b.y.z", b"5"), ("a", b"6")]
    state = await js.consumer_info(EVENT_STREAM, f"inbox-{token}")
    assert state.num_ack_pending == 0
    assert state.num_pending == 0
    assert state.num_redelivered == 0


async def test_a_durable_consumer_resumes_where_it_stopped(
    js: JetStreamContext, token: str
) -> None:
    await ensure_event_stream(js)
    await publish_all(js, token)
    seen: list[bytes] = []

    async def handle(msg: Msg) -> None:
        seen.append(msg.data)

    first = consumer(js, token, handle)
    await first.start()
    await eventually(lambda: len(seen) == 4)
    await first.stop()
    await publish(js, f"ws.evt.{token}.a", b"6")
    second = consumer(js, token, handle)
    await second.start()
    try:
        await eventually(lambda: len(seen) == 5)
        await asyncio.sleep(0.2)
    finally:
        await second.stop()
    # Nothing handled twice: the acks were recorded by the server.
    assert seen == [b"0", b"1", b"3", b"5", b"6"]


async def test_the_same_consumer_started_again_after_a_stop_goes_on(
    js: JetStreamContext, token: str
) -> None:
    # As an inbox does when its service's lease is lost, then won back by the same instance.
    await ensure_event_stream(js)
    await publish_all(js, token)
    seen: list[bytes] = []

    async def handle(msg: Msg) -> None:
        seen.append(msg.data)

    bus = consumer(js, token, handle)
    await bus.start()
    await eventually(lambda: len(seen) == 4)
    await bus.stop()
    await publish(js, f"ws.evt.{token}.a", b"6")
    await bus.start()
    try:
        await eventually(lambda: len(seen) == 5)
    finally:
        await bus.stop()
    assert seen == [b"0", b"1", b"3", b"5", b"6"]


async def test_a_failure_is_retried_before_anything_later(js: JetStreamContext, token: str) -> None:
    await ensure_event_stream(js)
    await publish_all(js, token)
    attempts: list[tuple[bytes, int]] = []

    async def flaky(msg: Msg) -> None:
        attempts.append((msg.data, msg.metadata.num_delivered))
        if msg.data == b"1" and msg.metadata.num_delivered < 3:
            raise RuntimeError("database is down")

    bus = consumer(js, token, flaky)
    await bus.start()
    try:
        await eventually(lambda: len(attempts) == 6)
    finally:
        await bus.stop()
    # "1" failed twice and was redelivered (nak with delay) before "3" was looked at.
    assert attempts == [(b"0", 1), (b"1", 1), (b"1", 2), (b"1", 3), (b"3", 1), (b"5", 1)]
    state = await js.consumer_info(EVENT_STREAM, f"inbox-{token}")
    assert state.num_ack_pending == 0
    assert state.num_pending == 0


async def test_a_poison_message_is_terminated_and_reported(
    js: JetStreamContext, token: str
) -> None:
    await ensure_event_stream(js)
    await publish_all(js, token)
    handled: list[bytes] = []
    poisoned: list[tuple[bytes, str]] = []

    async def handle(msg: Msg) -> None:
        handled.append(msg.data)
        if msg.data == b"1":
            raise PoisonMessage("unknown event type")

    async def on_poison(msg: Msg, error: PoisonMessage) -> None:
        poisoned.append((msg.data, str(error)))

    bus = consumer(js, token, handle, on_poison)
    await bus.start()
    try:
        await eventually(lambda: len(handled) == 4)
        await asyncio.sleep(0.3)  # room for a redelivery that must not come
    finally:
        await bus.stop()
    assert handled == [b"0", b"1", b"3", b"5"]
    assert poisoned == [(b"1", "unknown event type")]
    state = await js.consumer_info(EVENT_STREAM, f"inbox-{token}")
    assert state.num_ack_pending == 0
    assert state.num_pending == 0


async def test_a_failing_poison_report_is_retried(js: JetStreamContext, token: str) -> None:
    await ensure_event_stream(js)
    await publish(js, f"ws.evt.{token}.a", b"bad")
    reports: list[int] = []

    async def handle(msg: Msg) -> None:
        raise PoisonMessage("cannot decode")

    async def on_poison(msg: Msg, error: PoisonMessage) -> None:
        reports.append(msg.metadata.num_delivered)
        if len(reports) == 1:
            raise RuntimeError("store unavailable")

    bus = consumer(js, token, handle, on_poison)
    await bus.start()
    try:
        await eventually(lambda: len(reports) == 2)
        await asyncio.sleep(0.3)
    finally:
        await bus.stop()
    # Reported again on redelivery, then terminated: never a third time.
    assert reports == [1, 2]


async def test_stop_lets_the_message_in_hand_finish(js: JetStreamContext, token: str) -> None:
    await ensure_event_stream(js)
    await publish_all(js, token)
    started = asyncio.Event()
    finished: list[bytes] = []

    async def slow(msg: Msg) -> None:
        started.set()
        await asyncio.sleep(0.4)
        finished.append(msg.data)

    bus = consumer(js, token, slow)
    await bus.start()
    await started.wait()
    await bus.stop(timeout=5)
    # The first message finished and was acked; nothing after it was started.
    assert finished == [b"0"]
    state = await js.consumer_info(EVENT_STREAM, f"inbox-{token}")
    assert state.num_ack_pending == 0
    assert state.delivered.stream_seq == state.ack_floor.stream_seq


async def test_stop_when_idle_is_prompt(js: JetStreamContext, token: str) -> None:
    await ensure_event_stream(js)

    async def handle(msg: Msg) -> None:
        raise AssertionError("nothing to handle")

    bus = consumer(js, token, handle)
    await bus.start()
    await asyncio.sleep(0.1)
    started = time.monotonic()
    await bus.stop(timeout=5)
    # At most one fetch (0.5 s here) to wait out, with room for a busy machine: well short of
    # the 5 s stop timeout that a loop not noticing the stop would run into.
    assert time.monotonic() - started < 0.5 + 1.5


async def test_a_long_handler_keeps_its_message_from_a_replica(
    js: JetStreamContext, token: str
) -> None:
    await ensure_event_stream(js)
    for n in range(3):
        await publish(js, f"ws.evt.{token}.a", f"{n}".encode())
    seen: list[tuple[bytes, int]] = []
    # in_progress goes every ack_wait / 3 (1 s): a stalled event loop on a busy machine has 2 s
    # of slack before the server would redeliver.
    ack_wait = 3.0

    async def handle(msg: Msg) -> None:
        seen.append((msg.data, msg.metadata.num_delivered))
        if msg.data == b"0":
            await asyncio.sleep(2 * ack_wait)  # well past ack_wait

    def replica() -> OrderedConsumer:
        return OrderedConsumer(
            js,
            durable=f"replicas-{token}",
            filter_subjects=[f"ws.evt.{token}.>"],
            handler=handle,
            on_poison=nothing,
            ack_wait=ack_wait,
            fetch_timeout=0.5,
        )

    # Two replicas of a service share one durable consumer.
    first, second = replica(), replica()
    await first.start()
    await second.start()
    try:
        await eventually(lambda: len(seen) >= 3, timeout=20)
        await asyncio.sleep(0.5)
    finally:
        await first.stop()
        await second.stop()
    # "0" was kept (in progress) while handled: never handed to the other replica meanwhile.
    assert seen == [(b"0", 1), (b"1", 1), (b"2", 1)]


async def test_a_deleted_durable_consumer_is_created_again(
    js: JetStreamContext, token: str
) -> None:
    await ensure_event_stream(js)
    await publish(js, f"ws.evt.{token}.a", b"0")
    seen: list[bytes] = []

    async def handle(msg: Msg) -> None:
        seen.append(msg.data)

    bus = consumer(js, token, handle)
    await bus.start()
    try:
        await eventually(lambda: seen == [b"0"])
        # An operator (or a lost stream) removes the durable consumer under the running service.
        await js.delete_consumer(EVENT_STREAM, f"inbox-{token}")
        await publish(js, f"ws.evt.{token}.a", b"1")
        # It comes back by itself, from the start of the stream (the handler de-duplicates).
        await eventually(lambda: seen[-1:] == [b"1"])
    finally:
        await bus.stop()
    assert seen == [b"0", b"0", b"1"]
    assert bus.recreated == 1
    state = await js.consumer_info(EVENT_STREAM, f"inbox-{token}")
    assert state.config.deliver_policy == DeliverPolicy.ALL
    assert (state.num_pending, state.num_ack_pending) == (0, 0)
