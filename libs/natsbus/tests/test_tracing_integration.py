"""One trace across the bus: request -> handler, publish -> consumer, relay -> consumer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.client import JetStreamContext
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from contracts.base import ErrorReply, Ok, Struct
from natsbus import (
    BusClient,
    BusService,
    OrderedConsumer,
    PoisonMessage,
    RequestContext,
    ensure_event_stream,
    publish,
)
from telemetry import inject, tracer

pytestmark = pytest.mark.integration


class Ask(Struct, frozen=True, kw_only=True):
    crash: bool = False


def current_trace_id() -> int:
    return trace.get_current_span().get_span_context().trace_id


async def test_a_request_and_its_handler_share_one_trace(
    nc: Client, token: str, span_recorder: Any
) -> None:
    seen: list[int] = []

    async def handler(request: Ask, ctx: RequestContext) -> str:
        # The handler touches no propagation, yet runs inside the caller's trace.
        seen.append(current_trace_id())
        if request.crash:
            raise RuntimeError("boom")
        return "ok"

    svc = await BusService.start(nc, name="traced", version="1.0.0")
    subject = f"ws.qry.{token}.traced"
    await svc.add_endpoint("traced", subject, handler, Ask)
    client = BusClient(nc)
    try:
        with tracer().start_as_current_span("caller") as root:
            assert await client.request(subject, Ask(), timeout=5) == Ok(result="ok")
            failed = await client.request(subject, Ask(crash=True), timeout=5)
        assert isinstance(failed, ErrorReply)
    finally:
        await svc.stop()
    trace_id = root.get_span_context().trace_id
    assert seen == [trace_id, trace_id]
    sends = await span_recorder.wait_for(f"send {subject}", count=2)
    processes = await span_recorder.wait_for(f"process {subject}", count=2)
    for send, process in zip(sends, processes, strict=True):
        assert send.kind == SpanKind.PRODUCER
        assert process.kind == SpanKind.CONSUMER
        assert send.context.trace_id == process.context.trace_id == trace_id
        # The handler's span is a child of the request's span, across the wire.
        assert process.parent is not None
        assert process.parent.span_id == send.context.span_id
        assert send.attributes["messaging.destination.name"] == subject
    assert processes[0].status.status_code != StatusCode.ERROR
    # The failure is visible on both sides.
    assert processes[1].status.status_code == StatusCode.ERROR
    assert processes[1].attributes["error.type"] == "internal"
    assert sends[1].attributes["error.type"] == "internal"


async def test_an_event_and_its_consumer_share_one_trace(
    js: JetStreamContext, token: str, span_recorder: Any
) -> None:
    await ensure_event_stream(js)
    handled: list[tuple[str, int]] = []

    async def handle(msg: Msg) -> None:
        handled.append((msg.subject, current_trace_id()))

    async def on_poison(msg: Msg, error: PoisonMessage) -> None:
        raise AssertionError(error)

    # A live publish inside a span, and a relayed one carrying the trace stored with its event.
    with tracer().start_as_current_span("live") as live:
        await publish(js, f"ws.evt.{token}.live", b"{}")
    with tracer().start_as_current_span("stored") as stored:
        stored_headers = inject()
    await publish(js, f"ws.evt.{token}.relayed", b"{}", trace_headers=stored_headers)

    consumer = OrderedConsumer(
        js,
        durable=f"traced-{token}",
        filter_subjects=[f"ws.evt.{token}.>"],
        handler=handle,
        on_poison=on_poison,
        fetch_timeout=0.5,
    )
    await consumer.start()
    try:
        for _ in range(250):
            if len(handled) == 2:
                break
            await asyncio.sleep(0.02)
    finally:
        await consumer.stop()
    live_id = live.get_span_context().trace_id
    stored_id = stored.get_span_context().trace_id
    assert handled == [(f"ws.evt.{token}.live", live_id), (f"ws.evt.{token}.relayed", stored_id)]
    (relay_publish,) = await span_recorder.wait_for(f"publish ws.evt.{token}.relayed")
    # The relay's PRODUCER span continues the stored trace, as a child of the stored span.
    assert relay_publish.context.trace_id == stored_id
    assert relay_publish.parent is not None
    assert relay_publish.parent.span_id == stored.get_span_context().span_id
    (process,) = await span_recorder.wait_for(f"process ws.evt.{token}.relayed")
    assert process.parent is not None
    assert process.parent.span_id == relay_publish.context.span_id
