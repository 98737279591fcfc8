"""How fast a request fails when it cannot be answered (issue 15: "503 well before the request
timeout"), measured on a real nats-server, in one run:

- bus down: ``BusClient.request`` while the connection is down (ours) against a raw nats-py
  request to a subject with no responders on a live connection (the fastest failure NATS gives);
- server gone mid-request: a request whose only server unsubscribes 0.2 s after taking it: the
  time from that moment to the 503 (ours) against the 6 s a subject must go unserved plus one 1 s
  probe interval (what the design allows: a graceful stop's last handlers may still answer);
- server restarted mid-request: its instance dies with the request and a new one serves the
  subject at once (as `clipyard up` restarts it): the time from the new instance's start to the
  503 (ours) against one probe interval, within which the design promises it.

Medians of several rounds; the request timeout is 60 s throughout.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest

from contracts.base import ErrorReply, Struct
from natsbus import BusClient, BusService, RequestContext, connect
from natsbus.client import UNSERVED_FOR, WATCH_EVERY
from natsbus.context import PROBE_HEADER
from testkit.nats_server import start_nats_server

pytestmark = pytest.mark.bench


class _Job(Struct, frozen=True, kw_only=True):
    name: str


async def _restarted_mid_request(url: str) -> float:
    """Seconds from a new instance's start to the 503 of the request its predecessor died with."""
    subject = f"ws.cmd.issue.{uuid.uuid4().hex}"
    took = asyncio.Event()

    async def hangs(job: _Job, ctx: RequestContext) -> None:
        took.set()
        await asyncio.Event().wait()

    async def answers(job: _Job, ctx: RequestContext) -> str:
        return job.name

    first = await connect(url, name="bench-first")
    requester = await connect(url, name="bench-requester")
    service = await BusService.start(first, name="bench-restarts", version="1.0.0")
    await service.add_endpoint("work", subject, hangs, _Job)
    pending = asyncio.ensure_future(
        BusClient(requester).request(subject, _Job(name="x"), timeout=60)
    )
    await took.wait()
    await first.close()
    second = await connect(url, name="bench-second")
    again = await BusService.start(second, name="bench-restarts", version="1.0.0")
    await again.add_endpoint("work", subject, answers, _Job)
    began = time.perf_counter()
    reply = await pending
    took_s = time.perf_counter() - began
    assert isinstance(reply, ErrorReply), reply
    assert reply.status == 503, reply
    await service.stop(timeout=0)
    await again.stop(timeout=0)
    await second.close()
    await requester.close()
    return took_s


ROUNDS = 5


async def test_requests_fail_fast_when_nothing_can_answer(
    bench_report: Any, tmp_path: Path
) -> None:
    harness = __import__("bench_harness")
    server = start_nats_server(store_dir=tmp_path / "nats")
    try:
        nc = await connect(server.url, name="bench-outage")
        raw: list[float] = []
        for _ in range(ROUNDS):
            began = time.perf_counter()
            with pytest.raises(nats.errors.NoRespondersError):
                await nc.request(f"ws.qry.realizer.{uuid.uuid4().hex}", b"{}", timeout=60)
            raw.append(time.perf_counter() - began)
        gone: list[float] = []
        for _ in range(ROUNDS):
            subject = f"ws.cmd.issue.{uuid.uuid4().hex}"

            async def hangs(msg: Any) -> None:
                if msg.headers and PROBE_HEADER in msg.headers:
                    await msg.respond(b"")

            sub = await nc.subscribe(subject, queue="q", cb=hangs)
            pending = asyncio.ensure_future(BusClient(nc).request(subject, b"{}", timeout=60))
            await asyncio.sleep(0.2)
            await sub.unsubscribe()
            began = time.perf_counter()
            reply = await pending
            gone.append(time.perf_counter() - began)
            assert isinstance(reply, ErrorReply)
            assert reply.status == 503
        restarted = [await _restarted_mid_request(server.url) for _ in range(ROUNDS)]
        await nc.close()
        down_client = await connect(server.url, name="bench-outage-down")
        server.stop()
        for _ in range(200):  # the client notices the closed socket within moments
            if not down_client.is_connected:
                break
            await asyncio.sleep(0.05)
        down: list[float] = []
        for _ in range(ROUNDS):
            began = time.perf_counter()
            reply = await BusClient(down_client).request("ws.qry.realizer.x", b"{}", timeout=60)
            down.append(time.perf_counter() - began)
            assert isinstance(reply, ErrorReply)
            assert reply.status == 503
        await down_client.close()
    finally:
        server.stop()

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2] * 1e6

    bench_report.add(harness.Comparison(
        name="request while the bus is down", ours="BusClient.request, connection down",
        limit="raw request, no responders", ours_us=median(down), limit_us=median(raw),
        rounds=ROUNDS, ops_per_round=1, notes="the request timeout is 60 s",
    ))  # fmt: skip
    bench_report.add(harness.Comparison(
        name="server restarted mid-request", ours="503 after the new instance started",
        limit="one probe interval", ours_us=median(restarted), limit_us=WATCH_EVERY * 1e6,
        rounds=ROUNDS, ops_per_round=1, notes="the request timeout is 60 s",
    ))  # fmt: skip
    bench_report.add(harness.Comparison(
        name="server gone mid-request", ours="503 after the server went away",
        limit="the unserved wait and one probe interval",
        ours_us=median(gone), limit_us=(UNSERVED_FOR + WATCH_EVERY) * 1e6,
        rounds=ROUNDS, ops_per_round=1, notes="the request timeout is 60 s",
    ))  # fmt: skip
