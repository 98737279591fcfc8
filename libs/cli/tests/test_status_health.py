"""``clipyard status`` shows each instance's read-model projection failures, non-zero flagged."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest

from clipyard_cli.bus import InstanceStatus, read_model_health
from clipyard_cli.status import Lease, format_services, run_status, status_document
from contracts.service import (
    READ_MODEL_HEALTH_ENDPOINT,
    GetOperation,
    ReadModelHealth,
    VerifyReplay,
)
from natsbus import BusService, RequestContext


def _health(failures: int, **lease: Any) -> ReadModelHealth:
    return ReadModelHealth(
        projection_failures=failures, notifications_projected=40, projected_upto=40, **lease
    )


def _row(service: str, instance: str, health: ReadModelHealth | None) -> InstanceStatus:
    return InstanceStatus(
        service=service,
        instance=instance,
        node="local",
        id=f"micro-{instance}",
        version="0.1.0",
        latency_ms=1.25,
        health=health,
    )


def test_the_projection_column_flags_failing_instances() -> None:
    instances = {
        "api-gateway": [_row("api-gateway", "gw-1", _health(0))],
        "workspace-realizer": [
            _row("workspace-realizer", "wr-1", _health(3)),
            _row("workspace-realizer", "wr-2", _health(0)),
        ],
        "runtime-supervisor": [_row("runtime-supervisor", "rs-1", None)],  # an older version
        "git-credentials": [],
    }
    text = format_services(instances).splitlines()
    assert text[0].split()[-1] == "PROJECTION"
    assert text[1].split() == [
        "api-gateway",
        "ok",
        "gw-1",
        "local",
        "0.1.0",
        "1.2",
        "ms",
        "-",
        "ok",
    ]
    assert text[2].split()[2] == "wr-1"
    assert text[2].split()[-2:] == ["3", "FAILED"]
    assert text[3].split()[2] == "wr-2"
    assert text[3].split()[-1] == "ok"
    assert text[4].split()[-1] == "-"
    assert text[5].split() == ["git-credentials", "DOWN", "-", "-", "-", "-", "-", "-"]
    # The one failing instance gets a line that says what it means and what to do.
    assert len(text) == 7
    assert text[6].startswith("! workspace-realizer (wr-1): 3 stored events failed to project")
    assert "clipyard replay workspace-realizer --verify" in text[6]


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
    micro_id = service.id
    try:
        assert await read_model_health(nc, "workspace-realizer") == _health(0)
        assert await read_model_health(nc, "workspace-realizer", micro_id=micro_id) == _health(0)
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
        as_json = io.StringIO()
        json_code = await run_status(env, as_json, as_json=True)
    finally:
        await service.stop()
        await nc.drain()
    assert code == 1  # the other services are down
    document = json.loads(as_json.getvalue())
    assert (json_code, document["ok"]) == (1, False)
    assert document["services"]["api-gateway"] == []
    (instance,) = document["services"]["workspace-realizer"]
    assert instance["instance"] == micro_id
    assert instance["health"]["projectionFailures"] == 2
    assert "latencyMs" in instance
    assert document["nats"]["reached"].startswith("nats://")
    lines = out.getvalue().splitlines()
    realizer = next(line for line in lines if line.startswith("workspace-realizer"))
    # No instance id in its metadata: the micro id stands for it; no role: an older version.
    assert realizer.split()[1:4] == ["ok", micro_id, "-"]
    assert realizer.split()[-3:] == ["-", "2", "FAILED"]
    assert any(line.startswith(f"! workspace-realizer ({micro_id}): 2 stored") for line in lines)
    gateway = next(line for line in lines if line.startswith("api-gateway"))
    assert gateway.split()[1:] == ["DOWN", "-", "-", "-", "-", "-", "-"]
    leases = lines[lines.index(next(line for line in lines if line.startswith("LEASE"))) :]
    realizer_lease = next(line for line in leases if line.startswith("workspace-realizer"))
    assert realizer_lease.split()[1:3] == ["-", "-"]
    assert realizer_lease.endswith("its instances do not tell (an older version?)")
    gateway_lease = next(line for line in leases if line.startswith("api-gateway"))
    assert gateway_lease.split()[1:] == ["-", "-", "no", "instance", "answers"]


def test_json_field_names_are_camel_case_but_names_in_the_data_are_kept() -> None:
    lease = Lease("workspace-realizer", "wr-1", 7)
    row = _row("workspace-realizer", "wr-1", _health(0, other_leases={"host:worker_1": 3}))
    document = status_document(
        {"workspace-realizer": [row]}, [lease], {"external": False}, None, {}
    )
    assert isinstance(document, dict)
    (instance,) = document["services"]["workspace-realizer"]
    assert instance["latencyMs"] == 1.25
    assert instance["health"]["otherLeases"] == {"host:worker_1": 3}  # a key that is data, kept
