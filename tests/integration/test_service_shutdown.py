"""A service stops within 5 s of SIGTERM, with code 0, however hard its parts make it.

The service (``slow_service``) has a request in flight on the event loop, one stuck on the store
thread, an inbox consuming, and an OTLP endpoint that accepts connections and never answers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest

from contracts.base import ErrorReply
from natsbus import BusClient

pytestmark = pytest.mark.integration

HERE = Path(__file__).parent


@pytest.fixture
async def silent_collector() -> AsyncIterator[tuple[str, list[asyncio.StreamWriter]]]:
    """A TCP listener that accepts every connection and never says a word."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", held
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_a_busy_service_exits_within_5_s_of_sigterm(
    nats_server: Any, service_process: Any, silent_collector: tuple[str, list[Any]]
) -> None:
    endpoint, held = silent_collector
    proc = await service_process(
        "slow_service",
        env={
            "PYTHONPATH": str(HERE),
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",  # the exporter is stuck before the stop begins
        },
    )
    nc = await nats.connect(nats_server.url)
    try:
        bus = BusClient(nc)
        # A request that ends gives the exporter a span to send.
        await bus.call("ws.qry.controller.nap", b'{"seconds": 0}', str, timeout=5)
        in_flight = [
            asyncio.ensure_future(bus.request(subject, b'{"seconds": 60}', timeout=30))
            for subject in ("ws.qry.controller.nap", "ws.qry.controller.store_nap")
        ]
        # Both requests are being handled, and spans are being exported to the silent endpoint.
        for _ in range(100):
            if held:
                break
            await asyncio.sleep(0.05)
        assert held, "the service never tried to export its spans"
        await asyncio.sleep(0.3)
        assert not any(request.done() for request in in_flight)

        started = time.monotonic()
        code = await proc.terminate()  # fails unless the exit comes within 5 s with code 0
        elapsed = time.monotonic() - started

        assert code == 0
        assert elapsed < 5.0, elapsed
        # The callers were answered, not left to time out.
        for reply in await asyncio.wait_for(asyncio.gather(*in_flight), 2):
            assert isinstance(reply, ErrorReply)
            assert (reply.code, reply.status) == ("service_unavailable", 503)
    finally:
        await nc.drain()
    assert "shutdown stage" in proc.logs()  # it did have to cut stages short
