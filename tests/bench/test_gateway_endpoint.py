"""The gateway's trivial read and its health answer vs a bare Litestar app, under ``wrk``.

Ours: the api-gateway process (uvloop, telemetry on as shipped: a SERVER span per request, batched
to ``spans.jsonl``), with the five real services answering their pings (``$SRV.PING`` of each,
through NATS). ``GET /api/companies/{id}`` checks a board key, scopes to its
company and reads the read model; ``GET /api/health`` pings every service, NATS and the store.
Limit: the same routes on a bare Litestar app (constant answers) on the same uvicorn stack.

Load: ``wrk -t1 -c8`` (Debian's wrk), rounds interleaved, the order of the two sides alternated.
``wrk`` shares the machine's two cores with the server under test, as it does for both sides.
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = [pytest.mark.bench, pytest.mark.integration]

HERE = Path(__file__).parent
SECONDS, CONNS, ROUNDS = 3, 8, 5
ADMIN = "cy_admin_bench-admin-key-0123456789"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_http(url: str) -> None:
    for _ in range(200):
        try:
            httpx.get(url, timeout=0.5)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise AssertionError(f"{url} never answered")


def _compare(ours_url: str, limit_url: str, token: str | None) -> tuple[list[Any], list[Any]]:
    from bench_wrk import wrk

    wrk(ours_url, seconds=1, connections=CONNS, token=token)  # warm-up
    wrk(limit_url, seconds=1, connections=CONNS, token=token)
    ours, limit = [], []
    for n in range(ROUNDS):
        sides = [(limit, limit_url), (ours, ours_url)]
        for runs, url in sides if n % 2 == 0 else reversed(sides):
            runs.append(wrk(url, seconds=SECONDS, connections=CONNS, token=token))
    return ours, limit


def _row(name: str, ours: list[Any], limit: list[Any], what: str) -> Any:
    from bench_harness import Comparison

    ours_rps = statistics.median(r.rps for r in ours)
    limit_rps = statistics.median(r.rps for r in limit)
    ours_p99 = statistics.median(r.p99_ms for r in ours)
    limit_p99 = statistics.median(r.p99_ms for r in limit)
    return Comparison(
        name=name,
        ours=what,
        limit="bare Litestar, same route, constant answer, uvicorn + uvloop",
        ours_us=1e6 / ours_rps,
        limit_us=1e6 / limit_rps,
        rounds=ROUNDS,
        ops_per_round=int(ours_rps * SECONDS),
        notes=(
            f"{ours_rps:,.0f} vs {limit_rps:,.0f} req/s ({ours_rps / limit_rps:.2f}x); "
            f"p99 {ours_p99:.1f} vs {limit_p99:.1f} ms ({ours_p99 / limit_p99:.2f}x)"
        ),
        goal_ratio=1 / 0.7,
        goal=">= 0.7x req/s",
    )


def test_gateway_read_and_health_vs_bare_litestar(
    nats_server: Any, service_process: Any, bench_report: Any
) -> None:
    gateway_port, bare_port = _free_port(), _free_port()
    service_process.sync(
        "api_gateway",
        env={"CLIPYARD_HTTP_PORT": str(gateway_port), "CLIPYARD_ADMIN_KEY": ADMIN},
    )
    for name in ("workspace_realizer", "runtime_supervisor", "heartbeat_controller"):
        service_process.sync(name)
    service_process.sync("git_credentials")
    api = f"http://127.0.0.1:{gateway_port}/api"
    admin = {"Authorization": f"Bearer {ADMIN}"}
    company = httpx.post(f"{api}/companies", json={"name": "Acme"}, headers=admin).json()
    key = httpx.post(
        f"{api}/companies/{company['id']}/api-keys",
        json={"name": "bench", "kind": "board"},
        headers=admin,
    ).json()["key"]
    assert httpx.get(f"{api}/health").status_code == 200, httpx.get(f"{api}/health").text
    bare = subprocess.Popen([sys.executable, str(HERE / "bare_litestar.py"), str(bare_port)])
    try:
        _wait_http(f"http://127.0.0.1:{bare_port}/api/health")
        path = f"/api/companies/{company['id']}"
        ours, limit = _compare(f"{api[:-4]}{path}", f"http://127.0.0.1:{bare_port}{path}", key)
        bench_report.add(
            _row(
                "gateway GET /api/companies/{id} (wrk)",
                ours,
                limit,
                "api-gateway: board key, scoping, read model, SERVER span",
            )
        )
        ours, limit = _compare(f"{api}/health", f"http://127.0.0.1:{bare_port}/api/health", None)
        bench_report.add(
            _row("gateway GET /api/health (wrk)", ours, limit, "api-gateway: shared ping round")
        )
    finally:
        bare.terminate()
        bare.wait(10)
