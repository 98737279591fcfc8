"""How soon a service serves again when restarted over 10,000 stored events.

The api-gateway's store is filled with 10,000 events (companies and keys), the gateway runs once
so its relay publishes them, then it is restarted: the time from spawn to the first answered
``GET /api/companies/{id}`` is compared with the same start over an empty store.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest

from api_gateway.application import GatewayApplication
from contracts.base import Actor
from eventstore import Cause, StoreSettings, acting, build_application
from testkit.nats_server import start_nats_server

pytestmark = [pytest.mark.bench, pytest.mark.integration]

EVENTS, ROUNDS = 10_000, 3
ADMIN = "cy_admin_bench-restart-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _fill(home: Path, events: int) -> tuple[str, str]:
    """Write ``events`` events (a company then its keys); return a company id and a board key."""
    app = build_application(
        GatewayApplication, service="gateway", settings=StoreSettings(kind="sqlite", home=home)
    )
    with acting(Cause(actor=Actor(type="admin", id="bench"), reason="benchmark fill")):
        company = app.create_company("Acme Robotics")
        _, key = app.create_api_key(company.id, "bench", "board")
        for index in range(events - 2):
            if index % 2:
                app.create_company(f"Company {index}")
            else:
                app.create_api_key(company.id, f"key {index}", "board")
    assert app.last_notification_id() == events
    app.close()
    return company.id, key


def _serve_time(home: Path, nats_url: str, company_id: str, key: str) -> float:
    """Seconds from spawning the gateway until it answers a company read."""
    port = _free_port()
    env = {
        **os.environ,
        "CLIPYARD_HOME": str(home),
        "CLIPYARD_NATS_URL": nats_url,
        "CLIPYARD_HTTP_PORT": str(port),
        "CLIPYARD_ADMIN_KEY": ADMIN,
    }
    log = (home / "gateway.log").open("a")
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "api_gateway"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/api/companies/{company_id}"
        while True:
            try:
                answer = httpx.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=1)
                if answer.status_code == 200:
                    return time.perf_counter() - started
            except httpx.TransportError:
                pass
            assert proc.poll() is None, "the gateway exited"
            assert time.perf_counter() - started < 60, "the gateway never served"
            time.sleep(0.01)
    finally:
        proc.terminate()
        code = proc.wait(10)
        log.close()
        assert code == 0, f"the gateway stopped with {code}; see {home / 'gateway.log'}"


async def _stream_count(nats_url: str) -> int:
    nc = await nats.connect(nats_url)
    try:
        info = await nc.jetstream().stream_info("WS_EVENTS")
        return int(info.state.messages)
    finally:
        await nc.drain()


def test_restart_over_10k_events_vs_empty_store(
    tmp_path: Path, nats_server: Any, bench_report: Any
) -> None:
    import asyncio

    from bench_harness import Comparison

    full, empty = tmp_path / "full", tmp_path / "empty"
    company_id, key = _fill(full, EVENTS)
    # First start publishes the backlog; later starts are plain restarts.
    _serve_time(full, nats_server.url, company_id, key)
    for _ in range(200):
        if asyncio.run(_stream_count(nats_server.url)) >= EVENTS:
            break
        time.sleep(0.1)
    empty_company, empty_key = _fill(empty, 2)
    # The empty store needs a stream of its own: the full store's events are the gateway's too.
    other = start_nats_server(store_dir=tmp_path / "nats-empty")
    ours, limit = [], []
    try:
        for _ in range(ROUNDS):
            limit.append(_serve_time(empty, other.url, empty_company, empty_key))
            ours.append(_serve_time(full, nats_server.url, company_id, key))
    finally:
        other.stop()
    bench_report.add(
        Comparison(
            name="gateway restart to serving",
            ours=f"restart over {EVENTS:,} stored events (SQLite), to first answered read",
            limit="the same process started over an empty store",
            ours_us=statistics.median(ours) * 1e6,
            limit_us=statistics.median(limit) * 1e6,
            rounds=ROUNDS,
            ops_per_round=1,
            notes=f"restart seconds: {[round(t, 3) for t in ours]}",
        )
    )
