"""The four backend services start, answer, rebuild, and stop cleanly as real processes."""

from __future__ import annotations

import json
from typing import Any

import nats
import pytest

from contracts import subjects
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import (
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.service import (
    GetAuditTrail,
    GetOperation,
    ReplayReport,
    StopAllRuntimeServices,
    StopAllRuntimeServicesResult,
    VerifyReplay,
)
from contracts.workspace_subjects import stop_workspace_runtime_services
from natsbus import BusClient

pytestmark = pytest.mark.integration

SERVICES = [
    ("workspace_realizer", "realizer"),
    ("runtime_supervisor", "supervisor"),
    ("heartbeat_controller", "controller"),
    ("git_credentials", "credentials"),
]
OPERATOR = Principal(company_id=None, actor=Actor(type="admin", id="operator"))


@pytest.mark.parametrize(("module", "token"), SERVICES)
async def test_service_serves_ping_audit_replay_and_stops_on_sigterm(
    module: str, token: subjects.ServiceToken, nats_server: Any, service_process: Any
) -> None:
    # Started as `python -m <module>`, the service answers its micro ping (the fixture waits).
    proc = await service_process(module)
    nc = await nats.connect(nats_server.url)
    try:
        bus = BusClient(nc)
        # Micro discovery names it by its process name and version.
        info = await nc.request(f"$SRV.INFO.{subjects.SERVICE_NAMES[token]}", b"", timeout=5)
        described = json.loads(info.data)
        assert (described["name"], described["version"]) == (subjects.SERVICE_NAMES[token], "0.1.0")
        assert subjects.service_query(token, "audit") in {
            e["subject"] for e in described["endpoints"]
        }
        # An aggregate it does not hold is a clear 404, not a crash.
        audit = await bus.request(
            subjects.service_query(token, "audit"),
            GetAuditTrail(principal=OPERATOR, aggregate_id="5b0c2a8e-0000-4000-8000-000000000000"),
            timeout=5,
        )
        assert isinstance(audit, ErrorReply)
        assert (audit.code, audit.status) == ("not_found", 404)
        # Its read models rebuilt in a fresh instance equal the live ones.
        report = await bus.call(
            subjects.service_query(token, "replay_verify"),
            VerifyReplay(principal=OPERATOR),
            ReplayReport,
            timeout=10,
        )
        assert report.ok, report.differences
        # An unknown operation is a 404 naming the id.
        missing = await bus.request(
            subjects.service_query(token, "operation"),
            GetOperation(principal=OPERATOR, operation_id="nope"),
            timeout=5,
        )
        assert isinstance(missing, ErrorReply)
        assert missing.status == 404
        assert "nope" in missing.message
    finally:
        await nc.drain()
    # SIGTERM: exits with code 0 within 5 s (the fixture fails the test otherwise).
    await proc.terminate()


async def test_supervisor_answers_stop_all_for_its_node(
    nats_server: Any, service_process: Any
) -> None:
    # A fresh supervisor on node-a runs nothing, and says so (services: tests/service, tests/e2e).
    await service_process("runtime_supervisor", env={"CLIPYARD_NODE_ID": "node-a"})
    nc = await nats.connect(nats_server.url)
    try:
        reply = await BusClient(nc).request(
            subjects.command("runtime_service", "stop_all", "node-a"),
            StopAllRuntimeServices(principal=OPERATOR, node="node-a"),
            timeout=5,
        )
        assert isinstance(reply, Ok)
        result = StopAllRuntimeServicesResult(
            **{
                "node": reply.result["node"],
                "services_stopped": reply.result["servicesStopped"],
                "slots_stopped": reply.result["slotsStopped"],
            }
        )
        assert result == StopAllRuntimeServicesResult(
            node="node-a", services_stopped=0, slots_stopped=0
        )
    finally:
        await nc.drain()


async def test_supervisor_answers_stop_workspace_for_the_archive_saga(
    nats_server: Any, service_process: Any
) -> None:
    # The archive saga asks and waits; a workspace the supervisor runs nothing for has none to stop.
    await service_process("runtime_supervisor")
    nc = await nats.connect(nats_server.url)
    try:
        reply = await BusClient(nc).call(
            stop_workspace_runtime_services("local"),
            StopWorkspaceRuntimeServices(principal=OPERATOR, workspace_id="w-1"),
            StopWorkspaceRuntimeServicesResult,
            timeout=5,
        )
        assert reply == StopWorkspaceRuntimeServicesResult(workspace_id="w-1", stopped=0)
    finally:
        await nc.drain()
