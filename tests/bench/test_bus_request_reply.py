"""Request/reply through the bus library vs raw nats-py, side by side on one nats-server."""

from __future__ import annotations

from typing import Any

import msgspec
import nats
import pytest

from contracts.base import Actor, Principal, Query
from natsbus import BusClient, BusService, RequestContext

pytestmark = [pytest.mark.bench, pytest.mark.integration]

OPS = 500


class GetEcho(Query, tag="bench.get_echo.v1", kw_only=True, frozen=True):
    """A trivial typed query."""

    text: str


class Echo(msgspec.Struct, frozen=True, kw_only=True):
    text: str


PRINCIPAL = Principal(company_id=None, actor=Actor(type="system", id="bench"))


async def test_bus_request_reply_vs_raw_nats(nats_server: Any, bench_report: Any) -> None:
    from bench_harness import Comparison, measure_async

    server_nc = await nats.connect(nats_server.url)
    client_nc = await nats.connect(nats_server.url)
    service = await BusService.start(server_nc, name="bench-echo", version="0.0.1", description="")

    async def echo(request: GetEcho, ctx: RequestContext) -> Echo:
        return Echo(text=request.text)

    await service.add_endpoint("echo", "bench.qry.echo", echo, GetEcho)

    async def raw_responder(msg: Any) -> None:
        await msg.respond(msg.data)

    await server_nc.subscribe("bench.raw.echo", cb=raw_responder)
    await server_nc.flush()
    client = BusClient(client_nc)
    payload = msgspec.json.encode(GetEcho(principal=PRINCIPAL, text="hello"))

    async def ours() -> None:
        for _ in range(OPS):
            result = await client.call(
                "bench.qry.echo", GetEcho(principal=PRINCIPAL, text="hello"), Echo, timeout=5
            )
            assert result.text == "hello"

    async def raw() -> None:
        for _ in range(OPS):
            reply = await client_nc.request("bench.raw.echo", payload, timeout=5)
            assert reply.data == payload

    await raw()  # warm-up
    await ours()
    medians = await measure_async({"ours": ours, "limit": raw}, ops=OPS)
    bench_report.add(
        Comparison(
            name="bus request/reply",
            ours="BusClient.call -> BusService endpoint (typed, traced, task handler)",
            limit="raw nats-py request -> raw subscription responder",
            ours_us=medians["ours"],
            limit_us=medians["limit"],
            rounds=5,
            ops_per_round=OPS,
        )
    )
    await service.stop()
    await server_nc.drain()
    await client_nc.drain()
