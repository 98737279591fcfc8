"""Requests that cannot be served: expired in the queue, no responders, a dead connection.

What a failed request answers reaches HTTP clients through the gateway: it names the service and
the next step, keeps the subject in ``details``, and queued work past its deadline is never run.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import nats.errors
import pytest
from nats.aio.client import Client

from contracts.base import ErrorReply, Ok, Struct
from natsbus import BusClient, BusService, RequestContext, connect
from natsbus.client import service_of
from natsbus.context import PROBE_HEADER, epoch_ms
from testkit.nats_server import start_nats_server

pytestmark = pytest.mark.integration


class Job(Struct, frozen=True, kw_only=True):
    name: str


def test_the_service_of_a_subject_is_its_owner() -> None:
    assert service_of("ws.qry.realizer.operation") == "workspace-realizer"
    assert service_of("ws.cmd.project.create") == "workspace-realizer"
    assert service_of("ws.cmd.runtime_service.stop_all.local") == "runtime-supervisor"
    assert service_of("ws.qry.api_key.get") == "api-gateway"
    # Shared aggregates and foreign subjects have no single owner.
    assert service_of("ws.cmd.operation.get") is None
    assert service_of("$SRV.PING.api-gateway") is None


async def test_a_request_that_waited_past_its_deadline_is_not_run(nc: Client, token: str) -> None:
    ran: list[str] = []

    async def work(request: Job, ctx: RequestContext) -> str:
        ran.append(request.name)
        await asyncio.sleep(0.5)
        return request.name

    service = await BusService.start(nc, name="single", version="1.0.0")
    subject = f"ws.cmd.{token}.work"
    await service.add_endpoint("work", subject, work, Job, concurrency=1)
    client = BusClient(nc)
    try:
        first = asyncio.ensure_future(client.request(subject, Job(name="first"), timeout=5))
        await asyncio.sleep(0.05)  # the first one holds the only slot
        # The second waits for the slot longer than its caller waits: the caller gets 504 ...
        second = await client.request(subject, Job(name="second"), timeout=0.2)
        assert isinstance(second, ErrorReply)
        assert second.code == "timeout"
        assert isinstance(await first, Ok)
        # ... and the service answers it without doing the work (a retry would do it twice).
        third = await client.request(subject, Job(name="third"), timeout=5)
        assert isinstance(third, Ok)
    finally:
        await service.stop()
    assert ran == ["first", "third"]


async def test_no_responders_names_the_service_and_what_to_do(nc: Client) -> None:
    subject = "ws.qry.realizer.operation"
    reply = await BusClient(nc).request(subject, Job(name="x"), timeout=5)
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("service_unavailable", 503)
    assert reply.message == (
        "workspace-realizer is not answering; check `clipyard status` and retry."
    )
    assert subject not in reply.message
    # Nothing handled it: safe to send elsewhere or again.
    assert reply.details == {
        "subject": subject,
        "service": "workspace-realizer",
        "notDelivered": True,
    }


async def test_a_timeout_names_the_service(nc: Client, token: str) -> None:
    subject = f"ws.cmd.issue.{token}"
    sub = await nc.subscribe(subject, cb=_ignore)  # a responder that never answers
    try:
        reply = await BusClient(nc).request(subject, Job(name="x"), timeout=0.2)
    finally:
        await sub.unsubscribe()
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("timeout", 504)
    assert reply.message.startswith("workspace-realizer did not answer within 0.2 s")
    assert "clipyard status" in reply.message
    assert reply.details == {"subject": subject, "service": "workspace-realizer"}


async def test_a_closed_connection_is_service_unavailable(nats_server: Any) -> None:
    closed = await connect(nats_server.url, name="natsbus-closed")
    await closed.close()
    subject = "ws.cmd.runtime_service.stop_all.local"
    reply = await BusClient(closed).request(subject, Job(name="x"), timeout=5)
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("service_unavailable", 503)
    assert reply.message.startswith("runtime-supervisor cannot be reached")
    assert reply.details == {
        "subject": subject,
        "service": "runtime-supervisor",
        "notDelivered": True,
    }


async def _ignore(msg: Any) -> None:
    return None


async def test_a_request_whose_server_goes_away_is_503_within_seconds_not_at_its_timeout(
    nc: Client, token: str
) -> None:
    subject = f"ws.cmd.issue.{token}"
    probes: list[Any] = []

    async def hangs(msg: Any) -> None:  # takes the request, answers only probes, then dies
        if msg.headers and PROBE_HEADER in msg.headers:
            probes.append(msg)
            await msg.respond(b"")

    sub = await nc.subscribe(subject, queue="q", cb=hangs)
    loop = asyncio.get_running_loop()
    began = loop.time()
    pending = asyncio.ensure_future(BusClient(nc).request(subject, Job(name="x"), timeout=60))
    await asyncio.sleep(1.5)
    assert not pending.done(), "a live server's slow request is not cut short"
    assert probes, "the requester asked whether anyone still serves the subject"
    await sub.unsubscribe()  # the server died with the request
    reply = await asyncio.wait_for(pending, 10)
    assert isinstance(reply, ErrorReply)
    assert (reply.code, reply.status) == ("service_unavailable", 503)
    assert "stopped while handling this request" in reply.message
    # Answered some seconds after the loss (a graceful stop's last handlers get 6 s to answer),
    # not at the 60 s timeout.
    assert loop.time() - began < 12


async def test_a_request_while_the_bus_is_down_is_503_at_once(tmp_path: Any) -> None:
    server = start_nats_server(store_dir=tmp_path / "nats")
    client = await connect(server.url, name="natsbus-outage")
    try:
        server.stop()
        for _ in range(50):
            if not client.is_connected:
                break
            await asyncio.sleep(0.1)
        loop = asyncio.get_running_loop()
        began = loop.time()
        reply = await BusClient(client).request("ws.qry.realizer.operation", Job(name="x"),
                                                timeout=60)  # fmt: skip
        assert isinstance(reply, ErrorReply)
        assert (reply.code, reply.status) == ("service_unavailable", 503)
        assert "connection is down" in reply.message
        assert loop.time() - began < 1, "not held in the reconnect buffer until the timeout"
    finally:
        await client.close()
        server.stop()


async def test_a_bus_service_answers_a_probe_without_running_the_handler(
    nc: Client, token: str
) -> None:
    ran: list[str] = []

    async def handle(job: Job, ctx: RequestContext) -> Ok:
        ran.append(job.name)
        return Ok(result=None)

    service = await BusService.start(nc, name="probed", version="1.0.0")
    try:
        await service.add_endpoint("probed", f"ws.cmd.issue.{token}", handle, Job)
        answer = await nc.request(f"ws.cmd.issue.{token}", b"", timeout=5,
                                  headers={PROBE_HEADER: "1"})  # fmt: skip
        assert answer.data == b""
        assert ran == []
    finally:
        await service.stop()


async def test_a_probe_is_answered_on_a_reply_inbox_only(nc: Client, token: str) -> None:
    async def handle(job: Job, ctx: RequestContext) -> Ok:
        return Ok(result=None)

    service = await BusService.start(nc, name="probed-reply", version="1.0.0")
    seen: list[Any] = []

    async def caught(msg: Any) -> None:
        seen.append(msg)

    trap = await nc.subscribe(f"ws.evt.issue.{token}", cb=caught)
    try:
        await service.add_endpoint("probed", f"ws.cmd.issue.{token}", handle, Job)
        # A requester naming an event subject as the reply: the service publishes nothing there.
        await nc.publish(f"ws.cmd.issue.{token}", b"", reply=f"ws.evt.issue.{token}",
                         headers={PROBE_HEADER: "1"})  # fmt: skip
        await nc.flush()
        await asyncio.sleep(0.3)
        assert seen == []
    finally:
        await trap.unsubscribe()
        await service.stop()


async def test_a_request_lost_with_an_instance_that_restarted_at_once_is_503_within_seconds(
    nats_server: Any, token: str
) -> None:
    subject = f"ws.cmd.issue.{token}"
    took = asyncio.Event()

    async def hangs(job: Job, ctx: RequestContext) -> Ok:
        took.set()
        await asyncio.Event().wait()  # never answers: its instance dies with the request
        raise AssertionError("unreachable")

    async def answers(job: Job, ctx: RequestContext) -> Ok:
        return Ok(result=job.name)

    first_nc = await connect(nats_server.url, name="natsbus-first")
    requester = await connect(nats_server.url, name="natsbus-requester")
    first = await BusService.start(first_nc, name="restarts", version="1.0.0")
    await first.add_endpoint("work", subject, hangs, Job)
    loop = asyncio.get_running_loop()
    began = loop.time()
    client = BusClient(requester)
    pending = asyncio.ensure_future(client.request(subject, Job(name="lost"), timeout=60))
    second_nc: Client | None = None
    try:
        await asyncio.wait_for(took.wait(), 5)
        await asyncio.sleep(1.5)
        assert not pending.done(), "a request its live instance holds is not cut short"
        await first_nc.close()  # the instance dies, the request with it; no reply is ever sent
        second_nc = await connect(nats_server.url, name="natsbus-second")
        second = await BusService.start(second_nc, name="restarts", version="1.0.0")
        await second.add_endpoint("work", subject, answers, Job)  # back at once, served again
        reply = await asyncio.wait_for(pending, 10)
        assert isinstance(reply, ErrorReply)
        assert (reply.code, reply.status) == ("service_unavailable", 503)
        assert "restarted while handling this request" in reply.message
        assert loop.time() - began < 8, "answered soon after the restart, not at the timeout"
        # The restarted instance serves new requests.
        assert await client.request(subject, Job(name="next"), timeout=5) == Ok(result="next")
    finally:
        pending.cancel()
        await first.stop(timeout=0)
        for conn in (first_nc, second_nc, requester):
            if conn is not None and not conn.is_closed:
                await conn.close()


async def served_for(requester: Client, subject: str) -> None:
    """Wait until a probe from ``requester`` on ``subject`` is answered: the server routes the
    requester's messages to the service (once, a loaded CI machine's first request found no
    responders right after the service's subscription was flushed)."""
    for _ in range(50):
        try:
            await requester.request(subject, b"", timeout=1, headers={PROBE_HEADER: "ready?"})
            return
        except (nats.errors.NoRespondersError, nats.errors.TimeoutError):  # not yet: ask again
            await asyncio.sleep(0.1)
    raise AssertionError(f"nothing answers {subject}")


async def test_an_instance_that_holds_the_request_is_waited_for_whatever_its_start_time(
    nats_server: Any, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its clock is an hour ahead: by its start time alone it would look like a restart. It holds
    # the request, so the request waits for its answer; and once answered it holds nothing.
    subject = f"ws.cmd.issue.{token}"

    async def slow(job: Job, ctx: RequestContext) -> str:
        await asyncio.sleep(2.5)
        return job.name

    service_nc = await connect(nats_server.url, name="natsbus-held")
    requester = await connect(nats_server.url, name="natsbus-held-requester")
    service = await BusService.start(service_nc, name="held", version="1.0.0")
    monkeypatch.setattr(service, "_started", str(epoch_ms(time.time() + 3600)))
    try:
        await service.add_endpoint("work", subject, slow, Job)
        await served_for(requester, subject)
        reply = await BusClient(requester).request(subject, Job(name="kept"), timeout=10)
        assert reply == Ok(result="kept")
        assert service.held == {}
    finally:
        await service.stop(timeout=0)
        await service_nc.close()
        await requester.close()


async def test_a_request_held_by_a_paused_replica_is_503_within_seconds(
    nats_server: Any, token: str
) -> None:
    # Two replicas of the subject's service: the one that took the request is paused (its
    # connection stays open, it answers nothing, not even probes); the other is live and does
    # not hold it. The request answers 503 in seconds, not at its 60 s timeout.
    subject = f"ws.cmd.issue.{token}"
    paused_nc = await connect(nats_server.url, name="natsbus-paused")
    live_nc = await connect(nats_server.url, name="natsbus-live")
    requester = await connect(nats_server.url, name="natsbus-paused-requester")

    async def paused(msg: Any) -> None:
        return  # took it, then froze

    await paused_nc.subscribe(subject, queue="q", cb=paused)
    await paused_nc.flush()
    live = await BusService.start(live_nc, name=service_of(subject) or "", version="1.0.0")
    try:
        loop = asyncio.get_running_loop()
        began = loop.time()
        reply = await BusClient(requester).request(subject, Job(name="x"), timeout=60)
        took = loop.time() - began
        assert isinstance(reply, ErrorReply)
        assert (reply.code, reply.status) == ("service_unavailable", 503)
        assert "stopped answering while handling this request" in reply.message
        assert "look at the result before retrying" in reply.message
        assert took < 10
    finally:
        await live.stop(timeout=0)
        for conn in (paused_nc, live_nc, requester):
            await conn.close()
