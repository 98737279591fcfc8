"""``clipyard status`` shows each service's read-model projection failures, non-zero flagged."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest

from clipyard_cli.bus import Ping, read_model_health
from clipyard_cli.status import format_services, run_status
from contracts.service import (
    READ_MODEL_HEALTH_ENDPOINT,
    GetOperation,
    ReadModelHealth,
    VerifyReplay,
)
from natsbus import BusService, RequestContext


def _health(failures: int) -> ReadModelHealth:
    return ReadModelHealth(
        projection_failures=failures, notifications_projected=40, projected_upto=40
    )


def test_the_projection_column_flags_failing_services() -> None:
    rows = [
        ("api-gateway", Ping(name="api-gateway", id="ID1", version="0.1.0", latency_ms=1.25)),
        ("workspace-realizer", Ping(name="workspace-realizer", id="ID2", version="0.1.0")),
        ("runtime-supervisor", Ping(name="runtime-supervisor", id="ID3", version="0.1.0")),
        ("git-credentials", None),
    ]
    health = {
        "api-gateway": _health(0),
        "workspace-realizer": _health(3),
        "runtime-supervisor": None,  # did not tell (an older version)
        "git-credentials": None,
    }
    text = format_services(rows, health).splitlines()
    assert text[0].split() == ["SERVICE", "STATUS", "VERSION", "LATENCY", "ID", "PROJECTION"]
    assert text[1].split() == ["api-gateway", "ok", "0.1.0", "1.2", "ms", "ID1", "ok"]
    assert text[2].split()[-2:] == ["3", "FAILED"]
    assert text[3].split()[-1] == "-"
    assert text[4].split() == ["git-credentials", "DOWN", "-", "-", "-", "-"]
    # The one failing service gets a line that says what it means and what to do.
    assert len(text) == 6
    assert text[5].startswith("! workspace-realizer: 3 stored events failed to project")
    assert "clipyard replay workspace-realizer --verify" in text[5]


def test_without_health_the_table_is_as_before() -> None:
    rows = [("api-gateway", Ping(name="api-gateway", id="ID1", version="0.1.0"))]
    assert format_services(rows).splitlines()[0].split()[-1] == "ID"
    assert format_services(rows, {"api-gateway": _health(1)}).count("FAILED") == 1


@pytest.mark.integration
async def test_status_shows_the_count_a_service_reports(nats_server: Any, tmp_path: Path) -> None:
    nc = await nats.connect(nats_server.url)
    failures = 0

    def stats(endpoint: str) -> object:
        if endpoint != READ_MODEL_HEALTH_ENDPOINT:
            return None
        return msgspec.to_builtins(_health(failures))

    async def unused(request: Any, ctx: RequestContext) -> None:
        raise AssertionError("not asked")

    service = await BusService.start(nc, name="workspace-realizer", version="0.0.9", stats=stats)
    await service.add_endpoint(
        "replay_verify", "ws.qry.realizer.replay_verify", unused, VerifyReplay
    )
    await service.add_endpoint("operation", "ws.qry.realizer.operation", unused, GetOperation)
    try:
        assert await read_model_health(nc, "workspace-realizer") == _health(0)
        assert await read_model_health(nc, "heartbeat-controller") is None  # nobody answers
        failures = 2
        env = {
            "CLIPYARD_HOME": str(tmp_path),
            "CLIPYARD_NATS_URL": nats_server.url,
            "CLIPYARD_NATS_USER": "cli",
            "CLIPYARD_NATS_PASSWORD": "unused-without-authorization",
        }
        out = io.StringIO()
        code = await run_status(env, out)
    finally:
        await service.stop()
        await nc.drain()
    assert code == 1  # the other services are down
    lines = out.getvalue().splitlines()
    realizer = next(line for line in lines if line.startswith("workspace-realizer"))
    assert realizer.split()[1] == "ok"
    assert realizer.split()[-2:] == ["2", "FAILED"]
    assert any(line.startswith("! workspace-realizer: 2 stored events") for line in lines)
    gateway = next(line for line in lines if line.startswith("api-gateway"))
    assert gateway.split()[1:] == ["DOWN", "-", "-", "-", "-"]
