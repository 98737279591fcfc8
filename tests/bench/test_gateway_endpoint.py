"""A trivial gateway endpoint vs a bare Litestar app, both real processes under uvicorn.

Ours: ``GET /api/companies/{id}`` on the api-gateway process (board key checked by hash, company
scoping, read model through the store thread, msgspec response). Limit: the same route on a bare
Litestar app returning a constant. Load: a hand-written keep-alive client in its own process.
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
TOTAL, CONNS, ROUNDS = 3000, 8, 5
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


def _load(port: int, path: str, token: str) -> float:
    out = subprocess.run(
        [
            sys.executable,
            str(HERE / "httpload.py"),
            "127.0.0.1",
            str(port),
            path,
            token,
            str(TOTAL),
            str(CONNS),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout)


def test_gateway_endpoint_vs_bare_litestar(
    nats_server: Any, service_process: Any, bench_report: Any
) -> None:
    from bench_harness import Comparison

    gateway_port, bare_port = _free_port(), _free_port()
    service_process.sync(
        "api_gateway",
        env={"CLIPYARD_HTTP_PORT": str(gateway_port), "CLIPYARD_ADMIN_KEY": ADMIN},
    )
    api = f"http://127.0.0.1:{gateway_port}/api"
    admin = {"Authorization": f"Bearer {ADMIN}"}
    company = httpx.post(f"{api}/companies", json={"name": "Acme"}, headers=admin).json()
    key = httpx.post(
        f"{api}/companies/{company['id']}/api-keys",
        json={"name": "bench", "kind": "board"},
        headers=admin,
    ).json()["key"]
    bare = subprocess.Popen([sys.executable, str(HERE / "bare_litestar.py"), str(bare_port)])
    try:
        _wait_http(f"http://127.0.0.1:{bare_port}/api/companies/x")
        path = f"/api/companies/{company['id']}"
        _load(gateway_port, path, key)  # warm-up
        _load(bare_port, path, key)
        ours, limit = [], []
        for _ in range(ROUNDS):
            limit.append(_load(bare_port, path, key))
            ours.append(_load(gateway_port, path, key))
    finally:
        bare.terminate()
        bare.wait(10)
    bench_report.add(
        Comparison(
            name="gateway GET /api/companies/{id}",
            ours="api-gateway process: key auth, scoping, read model, msgspec",
            limit="bare Litestar app, same route, constant answer",
            ours_us=statistics.median(ours),
            limit_us=statistics.median(limit),
            rounds=ROUNDS,
            ops_per_round=TOTAL,
            notes=f"{CONNS} keep-alive connections, client in its own process",
        )
    )
