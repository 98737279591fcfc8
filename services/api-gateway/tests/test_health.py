"""``GET /api/health``: every service pinged in parallel, no key, 503 naming what is down."""

from __future__ import annotations

import logging
import time
from typing import Any

import nats.errors
import pytest
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication
from api_gateway.http.dependencies import Ping
from contracts.subjects import SERVICE_NAMES

Client = TestClient[Any]


def _all_up(bus: Any) -> None:
    for n, name in enumerate(SERVICE_NAMES.values()):
        bus.pings[name] = Ping(version=f"0.1.{n}", latency_ms=0.5 + n)


def test_all_up_is_200_without_a_key(client: Client, bus: Any) -> None:
    _all_up(bus)
    response = client.get("/api/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["failing"] == []
    assert set(body["services"]) == set(SERVICE_NAMES.values())
    realizer = body["services"]["workspace-realizer"]
    assert (realizer["status"], realizer["version"], realizer["latencyMs"]) == ("ok", "0.1.1", 1.5)
    assert body["nats"]["status"] == "ok"
    assert body["store"] == {"status": "ok", "kind": "memory", "error": None}


def test_a_silent_service_is_503_degraded_and_named(client: Client, bus: Any) -> None:
    _all_up(bus)
    silent = ["heartbeat-controller", "runtime-supervisor"]
    for name in silent:
        del bus.pings[name]  # no answer: the fake times out like NATS would
    bus.pings["git-credentials"] = nats.errors.NoRespondersError()
    pinging: set[str] = set()
    at_once: list[set[str]] = []
    ping = bus.ping

    async def counted(service_name: str, *, timeout: float) -> Ping:
        pinging.add(service_name)
        at_once.append(set(pinging))
        try:
            answer: Ping = await ping(service_name, timeout=timeout)
            return answer
        finally:
            pinging.discard(service_name)

    bus.ping = counted
    started = time.monotonic()
    response = client.get("/api/health")
    elapsed = time.monotonic() - started
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    assert sorted(body["failing"]) == ["git-credentials", *silent]
    for name in silent:
        assert body["services"][name]["status"] == "down"
        assert "within 0.2 s" in body["services"][name]["error"]
    assert body["services"]["git-credentials"]["error"] == "not running (nothing answers its ping)"
    assert body["services"]["api-gateway"]["status"] == "ok"
    # The pings run in parallel: the silent services were waited for at the same time (one
    # timeout, not one per silent service) ...
    assert any(set(silent) <= both for both in at_once), at_once
    # ... and a dead service costs the health check its ping timeout (0.2 s), not more: 2 s
    # leaves room for a loaded machine and is still far below a hang.
    assert elapsed < 2.0


def test_nats_down_is_503(client: Client, bus: Any) -> None:
    _all_up(bus)
    bus.connected = False
    response = client.get("/api/health")
    assert response.status_code == 503
    assert response.json()["failing"] == ["nats"]
    assert response.json()["nats"]["status"] == "down"


LEAKY = (
    'connection to server at "pg-primary.internal.acme" (10.20.30.40), port 5432 failed: '
    'FATAL: password authentication failed for user "clipyard_gateway"'
)


def test_failures_are_named_without_revealing_the_deployment(
    client: Client,
    bus: Any,
    application: GatewayApplication,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _all_up(bus)
    bus.pings["workspace-realizer"] = OSError(f"nats: {LEAKY}")

    def broken_store() -> int:
        raise RuntimeError(LEAKY)

    monkeypatch.setattr(application, "check_store", broken_store)
    with caplog.at_level(logging.WARNING, logger="api_gateway.controllers.health"):
        response = client.get("/api/health")
    assert response.status_code == 503
    body = response.json()
    assert sorted(body["failing"]) == ["store", "workspace-realizer"]
    for leak in ("pg-primary", "10.20.30.40", "clipyard_gateway", "FATAL", "5432"):
        assert leak not in response.text
    assert body["store"] == {
        "status": "down",
        "kind": "memory",
        "error": "the store does not answer queries (see the gateway's log)",
    }
    assert body["services"]["workspace-realizer"]["error"] == (
        "the ping failed (see the gateway's log)"
    )
    # The operator finds the detail in the log.
    logged = "\n".join(
        f"{r.getMessage()} {r.exc_info[1] if r.exc_info else ''}" for r in caplog.records
    )
    assert "pg-primary.internal.acme" in logged
    assert "workspace-realizer" in logged


def test_one_round_of_pings_answers_the_requests_of_the_next_half_second(
    client: Client, bus: Any
) -> None:
    from api_gateway.http.shared_check import SharedCheck

    _all_up(bus)
    pinged: list[str] = []
    ping = bus.ping

    async def counted(service_name: str, *, timeout: float) -> Ping:
        pinged.append(service_name)
        answer: Ping = await ping(service_name, timeout=timeout)
        return answer

    bus.ping = counted
    now = [100.0]
    client.app.state.gateway.health = SharedCheck(0.5, clock=lambda: now[0])
    assert client.get("/api/health").status_code == 200
    now[0] += 0.4
    assert client.get("/api/health").status_code == 200
    assert len(pinged) == len(SERVICE_NAMES)  # the second answer is the first round's

    del bus.pings["heartbeat-controller"]
    now[0] += 0.2  # 0.6 s after the round started: a new round
    response = client.get("/api/health")
    assert response.status_code == 503
    assert response.json()["failing"] == ["heartbeat-controller"]
    assert len(pinged) == 2 * len(SERVICE_NAMES)
