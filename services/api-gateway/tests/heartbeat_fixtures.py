"""Wire-shaped answers of the heartbeat controller and the supervisor's slots, a fake controller
that mints run tokens through the gateway's real handler, and the controller's events."""

from __future__ import annotations

import importlib.util
import uuid
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

from eventsourcing.persistence import Tracking

from api_gateway.application import GatewayApplication
from api_gateway.endpoints import RunTokenEndpoints
from contracts.base import Actor, Principal
from contracts.run_events import AgentDeleted, RunFinished
from contracts.run_tokens import MintRunToken, RunTokenIssued
from eventstore import StoreExecutor
from natsbus import RequestContext

_spec = importlib.util.spec_from_file_location(
    "workspace_fixtures", Path(__file__).parent / "workspace_fixtures.py"
)
assert _spec
assert _spec.loader
wire: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wire)

AGENT = "4a1b2c3d-0e9f-4a8b-9c7d-6e5f4a3b2c1d"
OTHER_AGENT = "5b2c3d4e-1f0a-4b9c-8d7e-7f6a5b4c3d2e"
RUN = "8c3d4e5f-2a1b-4c0d-9e8f-8a7b6c5d4e3f"
WAKE = "9d4e5f6a-3b2c-4d1e-8f9a-9b8c7d6e5f4a"
CONTROLLER = Actor(type="system", id="heartbeat-controller")
_positions = count(1)


def agent(company_id: str, **changes: Any) -> dict[str, Any]:
    """An agent as the controller answers it."""
    return {
        "id": AGENT,
        "companyId": company_id,
        "name": "coder",
        "adapterType": "process",
        "adapterConfig": {"command": ["python3", "agent.py"], "timeoutSec": 600},
        "trustLevel": "untrusted",
        "maxConcurrentRuns": 1,
        "heartbeatIntervalSec": None,
        "createdAt": wire.NOW,
        "updatedAt": wire.NOW,
        **changes,
    }


def run(company_id: str, **changes: Any) -> dict[str, Any]:
    """A running run of ``AGENT`` on the test issue and workspace."""
    return {
        "id": RUN,
        "companyId": company_id,
        "agentId": AGENT,
        "issueId": wire.ISSUE,
        "executionWorkspaceId": wire.WS,
        "wakeupRequestId": WAKE,
        "source": "assignment",
        "wakeReason": "issue_assigned",
        "status": "running",
        "stage": "adapter_launch",
        "queuedAt": wire.NOW,
        "startedAt": wire.NOW,
        "finishedAt": None,
        "exitCode": None,
        "signal": None,
        "errorCode": None,
        "error": None,
        "stdoutExcerpt": None,
        "stderrExcerpt": None,
        "usage": None,
        "result": None,
        "logBytes": None,
        "coalescedCount": 0,
        "cancelRequested": False,
        "createdAt": wire.NOW,
        "updatedAt": wire.NOW,
        **changes,
    }


def slot_health() -> list[dict[str, Any]]:
    """Both slot types, as the supervisor answers ``GetSlotHealth``."""
    return [
        {"type": "local_stdio", "capacity": 4, "inUse": 1, "healthy": True, "sandbox": "bwrap"},
        {"type": "remote_http", "capacity": None, "inUse": 0, "healthy": True},
    ]


def controller_principal(company_id: str) -> Principal:
    """The principal the controller mints with."""
    return Principal(company_id=company_id, actor=CONTROLLER)


async def mint(
    application: GatewayApplication,
    company_id: str,
    *,
    run_id: str = RUN,
    agent_id: str = AGENT,
    issue_id: str | None = wire.ISSUE,
    workspace_id: str | None = wire.WS,
    expires_in: timedelta = timedelta(minutes=10),
    principal: Principal | None = None,
) -> RunTokenIssued:
    """Mint a run token through the gateway's bus handler, as the controller asks for one."""
    executor = StoreExecutor(name="mint-test")
    try:
        handler = RunTokenEndpoints(application, executor).mint
        request = MintRunToken(
            principal=principal or controller_principal(company_id),
            run_id=run_id,
            agent_id=agent_id,
            issue_id=issue_id,
            workspace_id=workspace_id,
            expires_at=datetime.now(UTC) + expires_in,
        )
        ctx = RequestContext.from_message("ws.cmd.run_token.mint", {})
        return await handler(request, ctx)
    finally:
        executor.close()


def _envelope(company_id: str, aggregate: str, aggregate_id: str) -> dict[str, Any]:
    return {
        "event_id": str(uuid.uuid4()),
        "aggregate": aggregate,
        "aggregate_id": aggregate_id,
        "aggregate_version": 7,
        "company_id": company_id,
        "occurred_at": datetime.now(UTC),
        "actor": CONTROLLER,
    }


def run_finished(company_id: str, run_id: str = RUN, status: str = "succeeded") -> RunFinished:
    """The controller's ``run.finished.v1``."""
    return RunFinished(
        **_envelope(company_id, "run", run_id),
        agent_id=AGENT,
        issue_id=wire.ISSUE,
        workspace_id=wire.WS,
        status=status,  # type: ignore[arg-type]
        exit_code=0,
    )


def agent_deleted(company_id: str, agent_id: str = AGENT) -> AgentDeleted:
    """The controller's ``agent.deleted.v1``."""
    return AgentDeleted(**_envelope(company_id, "agent", agent_id))


def tracking() -> Tracking:
    """A fresh position of the controller's stream."""
    return Tracking("controller", next(_positions))
