"""BusService and BusClient against a real nats-server: replies, concurrency, errors, stop."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.aio.client import Client

from contracts.base import Accepted, ErrorReply, Message, Ok, Struct
from contracts.errors import ErrorCode
from natsbus import (
    MAX_MESSAGE_BYTES,
    BusClient,
    BusRequestError,
    BusService,
    MessageTooLargeError,
    OperationAccepted,
    RequestContext,
    encode,
)

pytestmark = pytest.mark.integration


class Greet(Struct, frozen=True, kw_only=True):
    name: str
    delay: float = 0.0
    fail: str | None = None


class Greeting(Struct, frozen=True, kw_only=True):
    text: str
    deadline: float


class IssueNotFoundError(Exception):
    code = ErrorCode.NOT_FOUND
    status = 404

    def __init__(self, issue: str) -> None:
        self.details = {"issueId": issue}
        super().__init__(f"issue {issue} does not exist")


async def greet(request: Greet, ctx: RequestContext) -> Any:
    """The handler under test: waits, fails on demand, or greets."""
    if request.delay:
        await asyncio.sleep(request.delay)
    match request.fail:
        case "not_found":
            raise IssueNotFoundError(request.name)
        case "crash":
            raise RuntimeError("secret=hunter2 at /srv/app.py:12")
        case "accepted":
            return Accepted(operation_id=f"op-{request.name}")
        case "huge":
            return {"blob": "x" * MAX_MESSAGE_BYTES}
        case "surrogate":
            return {"name": b"caf\xe9".decode("utf-8", errors="surrogateescape")}
    return Greeting(text=f"hello {request.name}", deadline=ctx.deadline)


@pytest.fixture
async def service(nc: Client, token: str) -> AsyncIterator[tuple[BusService, str]]:
    svc = await BusService.start(nc, name="greeter", version="1.0.0", description="tests")
    subject = f"ws.qry.{token}.greet"
    await svc.add_endpoint("greet", subject, greet, Greet)
    yield svc, subject
    await svc.stop()


@pytest.fixture
def client(nc: Client) -> BusClient:
    return BusClient(nc)


async def test_typed_round_trip(service: tuple[BusService, str], client: BusClient) -> None:
    _, subject = service
    started = time.time()
    # call() decodes the ok result into the caller's type.
    greeting = await client.call(subject, Greet(name="ada"), Greeting, timeout=5)
    assert greeting.text == "hello ada"
    # The deadline travelled in the header: now + the 5 s timeout, to the millisecond.
    assert started + 4.9 < greeting.deadline < time.time() + 5.001
    # request() returns the ok reply itself, its result as plain JSON values.
    reply = await client.request(subject, Greet(name="bob"), timeout=5)
    assert isinstance(reply, Ok)
    assert reply.result["text"] == "hello bob"


class Open(Message, tag="door.open.v1", frozen=True, kw_only=True):
    door: str


class Close(Message, tag="door.close.v1", frozen=True, kw_only=True):
    door: str
    slam: bool = False


async def test_a_union_request_type_dispatches_by_tag(
    nc: Client, client: BusClient, token: str
) -> None:
    async def doors(request: Open | Close, ctx: RequestContext) -> str:
        match request:
            case Open(door=door):
                return f"opened {door}"
            case Close(door=door, slam=slam):
                return f"{'slammed' if slam else 'closed'} {door}"

    svc = await BusService.start(nc, name="doors", version="1.0.0")
    subject = f"ws.cmd.{token}.door"
    await svc.add_endpoint("door", subject, doors, Open | Close)
    try:
        assert await client.call(subject, Open(door="a"), str, timeout=5) == "opened a"
        assert await client.call(subject, Close(door="b", slam=True), str, timeout=5) == (
            "slammed b"
        )
        unknown = await client.request(subject, b'{"type":"door.paint.v1","door":"c"}', timeout=5)
    finally:
        await svc.stop()
    assert isinstance(unknown, ErrorReply)
    assert unknown.code == "validation_failed"
    assert "door.paint.v1" in unknown.message


async def test_a_slow_request_does_not_hold_up_fast_ones(
    nc: Client, client: BusClient, token: str
) -> None:
    slow_started = asyncio.Event()
    release = asyncio.Event()

    async def gated(request: Greet, ctx: RequestContext) -> str:
        if request.name == "slow":
            slow_started.set()
            await release.wait()  # held until the fast ones are all answered
        return f"hello {request.name}"

    svc = await BusService.start(nc, name="gated", version="1.0.0")
    subject = f"ws.qry.{token}.gated"
    await svc.add_endpoint("gated", subject, gated, Greet)
    try:
        slow = asyncio.create_task(client.request(subject, Greet(name="slow"), timeout=30))
        await asyncio.wait_for(slow_started.wait(), 10)  # the slow one is being handled
        fast = await asyncio.gather(
            *(client.request(subject, Greet(name=f"f{i}"), timeout=10) for i in range(20))
        )
        # All 20 fast requests on the same endpoint are answered while the slow one is still
        # held in its handler (were they queued behind it, they would time out instead).
        assert fast == [Ok(result=f"hello f{i}") for i in range(20)]
        assert not slow.done()
        release.set()
        assert await slow == Ok(result="hello slow")
    finally:
        release.set()
        await svc.stop()


async def test_concurrency_is_bounded_per_endpoint(
    nc: Client, client: BusClient, token: str
) -> None:
    running = 0
    peak = 0

    async def busy(request: Greet, ctx: RequestContext) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.1)
        running -= 1
        return request.name

    svc = await BusService.start(nc, name="busy", version="1.0.0")
    subject = f"ws.cmd.{token}.busy"
    await svc.add_endpoint("busy", subject, busy, Greet, concurrency=3)
    try:
        started = time.monotonic()
        replies = await asyncio.gather(
            *(client.call(subject, Greet(name=str(i)), str, timeout=5) for i in range(9))
        )
        elapsed = time.monotonic() - started
    finally:
        await svc.stop()
    assert sorted(replies) == [str(i) for i in range(9)]
    # Never more than 3 at once, and 3 at once indeed: 9 requests take at least three rounds of
    # 0.1 s (the upper bound only has to rule out a hang: peak == 3 shows they overlapped).
    assert peak == 3
    assert 0.29 < elapsed < 3.0, elapsed


async def test_errors_are_mapped_over_the_wire(
    service: tuple[BusService, str], client: BusClient
) -> None:
    _, subject = service
    # An exception with code/status/details keeps them.
    reply = await client.request(subject, Greet(name="i-9", fail="not_found"), timeout=5)
    assert reply == ErrorReply(
        code="not_found", message="issue i-9 does not exist", status=404, details={"issueId": "i-9"}
    )
    # Anything else is internal / 500, and nothing of its insides leaks.
    reply = await client.request(subject, Greet(name="x", fail="crash"), timeout=5)
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("internal", 500)
    assert "hunter2" not in reply.message
    assert "app.py" not in reply.message
    # A body that does not match the endpoint's type is validation_failed with msgspec's words.
    reply = await client.request(subject, b'{"name": 42}', timeout=5)
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("validation_failed", 400)
    assert "Expected `str`, got `int` - at `$.name`" in reply.message
    reply = await client.request(subject, b"{not json", timeout=5)
    assert isinstance(reply, ErrorReply)
    assert reply.code == "validation_failed"
    # A returned reply passes through as is.
    reply = await client.request(subject, Greet(name="long", fail="accepted"), timeout=5)
    assert reply == Accepted(operation_id="op-long")
    # call() raises for error and accepted.
    with pytest.raises(BusRequestError) as caught:
        await client.call(subject, Greet(name="i-9", fail="not_found"), Greeting, timeout=5)
    assert (caught.value.code, caught.value.status) == ("not_found", 404)
    assert caught.value.details == {"issueId": "i-9"}
    with pytest.raises(OperationAccepted) as accepted:
        await client.call(subject, Greet(name="long", fail="accepted"), Greeting, timeout=5)
    assert accepted.value.operation_id == "op-long"
    # A result that is not what the caller expects is a bad reply, not a crash.
    with pytest.raises(BusRequestError) as bad:
        await client.call(subject, Greet(name="ada"), int, timeout=5)
    assert bad.value.code == "internal"
    assert subject in str(bad.value)


async def test_a_forwarded_bus_error_keeps_its_code(
    nc: Client, service: tuple[BusService, str], client: BusClient, token: str
) -> None:
    _, inner = service

    async def relay(request: Greet, ctx: RequestContext) -> Greeting:
        # A handler calling another service and letting its error escape.
        return await client.call(inner, request, Greeting, timeout=ctx.remaining())

    svc = await BusService.start(nc, name="relay", version="1.0.0")
    outer = f"ws.qry.{token}.relay"
    await svc.add_endpoint("relay", outer, relay, Greet)
    try:
        reply = await client.request(outer, Greet(name="i-3", fail="not_found"), timeout=5)
    finally:
        await svc.stop()
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status, reply.details) == ("not_found", 404, {"issueId": "i-3"})


async def test_a_timeout_is_an_error_reply_with_the_subject_in_its_details(
    service: tuple[BusService, str], client: BusClient
) -> None:
    _, subject = service
    started = time.monotonic()
    reply = await client.request(subject, Greet(name="z", delay=2.0), timeout=0.3)
    assert time.monotonic() - started < 1.0
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("timeout", 504)
    assert reply.details["subject"] == subject
    assert "within 0.3 s" in reply.message
    with pytest.raises(BusRequestError) as caught:
        await client.call(subject, Greet(name="z", delay=2.0), Greeting, timeout=0.3)
    assert (caught.value.code, caught.value.details["subject"]) == ("timeout", subject)


async def test_no_responders_is_service_unavailable(client: BusClient, token: str) -> None:
    subject = f"ws.cmd.{token}.nobody"
    started = time.monotonic()
    reply = await client.request(subject, Greet(name="x"), timeout=5)
    # Answered by the server at once, not after the timeout.
    assert time.monotonic() - started < 1.0
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("service_unavailable", 503)
    assert reply.details["subject"] == subject


async def test_an_oversize_request_is_refused_before_sending(
    nc: Client, client: BusClient, token: str
) -> None:
    subject = f"ws.cmd.{token}.big"
    seen: list[bytes] = []

    async def spy(msg: Any) -> None:
        seen.append(msg.data)

    sub = await nc.subscribe(subject, cb=spy)
    await nc.flush()
    with pytest.raises(MessageTooLargeError, match=subject) as caught:
        await client.request(subject, Greet(name="x" * MAX_MESSAGE_BYTES), timeout=1)
    assert caught.value.size > MAX_MESSAGE_BYTES
    # A message just under the limit goes through, so the spy does see traffic.
    await nc.publish(subject, b"small")
    await nc.flush()
    await asyncio.sleep(0.05)
    await sub.unsubscribe()
    assert seen == [b"small"]


async def test_an_oversize_reply_becomes_message_too_large(
    service: tuple[BusService, str], client: BusClient
) -> None:
    _, subject = service
    reply = await client.request(subject, Greet(name="x", fail="huge"), timeout=5)
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("message_too_large", 413)
    assert subject in reply.message


async def test_a_reply_json_cannot_carry_is_answered_as_an_internal_error_at_once(
    service: tuple[BusService, str], client: BusClient
) -> None:
    _, subject = service
    started = time.monotonic()
    reply = await client.request(subject, Greet(name="x", fail="surrogate"), timeout=5)
    assert isinstance(reply, ErrorReply)
    assert reply.status == 500
    assert time.monotonic() - started < 2  # answered, not left to the requester's timeout


async def test_micro_discovery_answers(nc: Client, service: tuple[BusService, str]) -> None:
    svc, subject = service
    ping = json.loads((await nc.request("$SRV.PING.greeter", b"", timeout=2)).data)
    assert ping["name"] == "greeter"
    info = json.loads((await nc.request(f"$SRV.INFO.greeter.{svc.id}", b"", timeout=2)).data)
    assert [e["subject"] for e in info["endpoints"]] == [subject]
    assert info["endpoints"][0]["queue_group"] == "q"


async def test_stop_waits_for_the_request_in_flight(
    nc: Client, client: BusClient, token: str
) -> None:
    started = asyncio.Event()
    finished = asyncio.Event()

    async def slow(request: Greet, ctx: RequestContext) -> str:
        started.set()
        await asyncio.sleep(0.5)
        finished.set()
        return f"done {request.name}"

    svc = await BusService.start(nc, name="stopper", version="1.0.0")
    subject = f"ws.cmd.{token}.slow"
    await svc.add_endpoint("slow", subject, slow, Greet)
    in_flight = asyncio.create_task(client.request(subject, Greet(name="a"), timeout=10))
    # This task resumes before the handler's 0.5 s sleep can end, so the request is still in hand.
    await asyncio.wait_for(started.wait(), 10)
    assert svc.in_flight == 1
    assert not finished.is_set()
    await svc.stop(timeout=10)
    # stop() returned only once the handler had finished (and answered).
    assert finished.is_set()
    assert svc.in_flight == 0
    assert await in_flight == Ok(result="done a")
    # No longer served.
    after = await client.request(subject, Greet(name="b"), timeout=1)
    assert isinstance(after, ErrorReply)
    assert after.code == "service_unavailable"


async def test_stop_cancels_what_outlives_its_timeout(
    nc: Client, client: BusClient, token: str
) -> None:
    svc = await BusService.start(nc, name="stopper", version="1.0.0")
    subject = f"ws.cmd.{token}.stuck"
    await svc.add_endpoint("stuck", subject, greet, Greet)
    in_flight = asyncio.create_task(client.request(subject, Greet(name="a", delay=30), timeout=5))
    await asyncio.sleep(0.1)
    started = time.monotonic()
    await svc.stop(timeout=0.2)
    assert time.monotonic() - started < 1.0
    reply = await in_flight
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("service_unavailable", 503)
    assert svc.in_flight == 0


async def test_replies_go_only_to_reply_inboxes(
    service: tuple[BusService, str], nc: Client
) -> None:
    # A requester that names an event subject as its reply subject gets nothing published there:
    # otherwise it could make the service publish onto a subject only the service may use.
    _, subject = service
    seen: list[bytes] = []

    async def watch(msg: Any) -> None:
        seen.append(msg.data)

    await nc.subscribe("ws.evt.company.created", cb=watch)
    await nc.publish(subject, encode(Greet(name="mallory")), reply="ws.evt.company.created")
    await nc.flush()
    await asyncio.sleep(0.3)
    assert seen == []
    # A normal request on the same endpoint still gets its answer.
    answered = await nc.request(subject, encode(Greet(name="ada")), timeout=5)
    assert b"hello ada" in answered.data
