"""Requests that cannot be served: expired in the queue, no responders, a dead connection.

What a failed request answers reaches HTTP clients through the gateway: it names the service and
the next step, keeps the subject in ``details``, and queued work past its deadline is never run.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from nats.aio.client import Client

from contracts.base import ErrorReply, Ok, Struct
from natsbus import BusClient, BusService, RequestContext, connect
from natsbus.client import service_of

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
    assert reply.details == {"subject": subject, "service": "workspace-realizer"}


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
    assert reply.details == {"subject": subject, "service": "runtime-supervisor"}


async def _ignore(msg: Any) -> None:
    return None
