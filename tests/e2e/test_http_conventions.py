"""Through HTTP, against the running stack: bad input is refused clearly and writes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
import pytest

from contracts import subjects
from contracts.base import Actor, Principal
from contracts.service import ReplayReport, VerifyReplay
from natsbus import BusClient

pytestmark = pytest.mark.e2e

OPERATOR = Principal(company_id=None, actor=Actor(type="admin", id="e2e"))


async def _stored(nats_url: str) -> int:
    """How many events the gateway's store holds (its replay report counts them)."""
    nc = await nats.connect(nats_url)
    try:
        report = await BusClient(nc).call(
            subjects.service_query("gateway", "replay_verify"),
            VerifyReplay(principal=OPERATOR),
            ReplayReport,
            timeout=10,
        )
    finally:
        await nc.drain()
    assert report.ok, report.differences
    return report.notifications_replayed


@pytest.mark.both_stores
async def test_bad_requests_get_clear_errors_and_write_nothing(
    stack: Any, nats_server: Any
) -> None:
    async with stack.admin as admin:
        created = await admin.post("/api/companies", json={"name": "Acme Robotics"})
        assert created.status_code == 201, created.text
        company = created.json()
        assert company["issuePrefix"] == "ACME"
        issued = await admin.post(
            f"/api/companies/{company['id']}/api-keys", json={"name": "ci", "kind": "board"}
        )
        assert issued.status_code == 201
        board_key = issued.json()["key"]
        before = await _stored(nats_server.url)

        # Malformed JSON: 400 invalid_json.
        bad_json = await admin.post(
            "/api/companies", content=b'{"name": ', headers={"Content-Type": "application/json"}
        )
        assert bad_json.status_code == 400
        assert bad_json.json()["code"] == "invalid_json"
        # A wrong type: 400 validation_failed, naming the field.
        wrong_type = await admin.post("/api/companies", json={"name": 42})
        assert wrong_type.status_code == 400
        assert wrong_type.json()["code"] == "validation_failed"
        assert "name" in wrong_type.text
        # An unknown field: refused, named.
        unknown = await admin.post("/api/companies", json={"name": "X", "colour": "red"})
        assert unknown.status_code == 400
        assert "colour" in unknown.text
        # Not for this key: 403 with a sentence saying what to do.
        agent_key = await admin.post(
            f"/api/companies/{company['id']}/api-keys", json={"name": "bot", "kind": "agent"}
        )
        assert agent_key.status_code == 403
        assert "board key" in agent_key.json()["error"]
        # Well-formed but not allowed: 422 with a sentence saying what to do.
        no_prefix = await admin.post("/api/companies", json={"name": "1234"})
        assert no_prefix.status_code == 422
        assert "issuePrefix" in no_prefix.json()["error"]
        # Unknown company: 404.
        missing = await admin.get("/api/companies/7d1c1f4e-0000-4000-8000-000000000000")
        assert missing.status_code == 404
        assert missing.json()["code"] == "not_found"
        # Over 256 KiB: 413.
        huge = await admin.post("/api/companies", json={"name": "x" * (300 * 1024)})
        assert huge.status_code == 413

    # Missing key, unknown key: 401 with an actionable message.
    async with stack.client() as anonymous:
        none = await anonymous.get(f"/api/companies/{company['id']}")
        assert none.status_code == 401
        assert none.json()["code"] == "unauthenticated"
    async with stack.client("cy_board_not-a-real-key") as stranger:
        assert (await stranger.get(f"/api/companies/{company['id']}")).status_code == 401

    # A revoked key stops working at once.
    async with stack.client(board_key) as board:
        assert (await board.get(f"/api/companies/{company['id']}")).status_code == 200
    async with stack.admin as admin:
        keys = (await admin.get(f"/api/companies/{company['id']}/api-keys")).json()
        assert "key" not in keys[0]
        assert (await admin.delete(f"/api/api-keys/{keys[0]['id']}")).status_code == 204
    after_revoke = await _stored(nats_server.url)
    async with stack.client(board_key) as board:
        revoked = await board.get(f"/api/companies/{company['id']}")
        assert revoked.status_code == 401

    # Nothing but the revocation was written by all of that.
    assert after_revoke == before + 1
    assert await _stored(nats_server.url) == after_revoke


@pytest.mark.both_stores
async def test_health_lists_all_five_services(stack: Any) -> None:
    async with stack.client() as anonymous:
        health = await anonymous.get("/api/health")
    assert health.status_code == 200
    body = health.json()
    assert body["status"] == "ok"
    assert set(body["services"]) == {
        "api-gateway",
        "workspace-realizer",
        "runtime-supervisor",
        "heartbeat-controller",
        "git-credentials",
    }
    assert all(s["status"] == "ok" for s in body["services"].values())


async def test_health_degrades_when_a_service_is_gone(stack: Any) -> None:
    await stack.processes["heartbeat_controller"].terminate()
    gone = asyncio.get_running_loop().time()
    async with stack.client() as anonymous:
        # An answer serves the requests of the next CLIPYARD_HEALTH_FRESH_FOR (0.5) s.
        while (health := await anonymous.get("/api/health")).status_code == 200:
            assert asyncio.get_running_loop().time() - gone < 2.0, "health still says ok"
            await asyncio.sleep(0.05)
    assert health.status_code == 503
    assert health.json()["status"] == "degraded"
    assert health.json()["services"]["heartbeat-controller"]["status"] == "down"


async def test_openapi_and_docs_need_no_key(stack: Any) -> None:
    async with stack.client() as anonymous:
        spec = await anonymous.get("/api/openapi.json")
        assert spec.status_code == 200
        assert "/api/companies" in spec.json()["paths"]
        assert (await anonymous.get("/api/docs")).status_code == 200
