"""Examples of the runtime-supervisor's commands, queries and events and the controller's run
events.

Loaded by ``examples.py``, which passes its envelope builder and principals in.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from contracts.base import Message, Principal
from contracts.egress_events import EgressObserved, EgressTallied
from contracts.run_events import RunFinished, RunStarted
from contracts.runtime_commands import (
    ControlRuntime,
    EnsureRunServices,
    GetRuntimeServiceLog,
    GetRuntimeState,
    ListRuntimeSummaries,
    RunEndedHere,
)
from contracts.runtime_events import (
    RuntimeProvisioningFailed,
    RuntimeProvisioningStarted,
    RuntimeProvisioningSucceeded,
    RuntimeServiceAdopted,
    RuntimeServiceDesiredStateChanged,
    RuntimeServiceFailed,
    RuntimeServiceHealthChanged,
    RuntimeServiceLeaseAcquired,
    RuntimeServiceLeaseReleased,
    RuntimeServiceStarted,
    RuntimeServiceStartFailed,
    RuntimeServiceStarting,
    RuntimeServiceStopped,
)
from contracts.workspace_config import StopPolicy

WS = "6e2b4d0f-9a8c-4f3e-8b2c-4d5e6f7a8b9c"
RUN = "9b5e7a3c-2d1f-4c6b-9e5f-7a8b9c0d1e2f"
AGENT = "ac5e7a3c-2d1f-4c6b-9e5f-7a8b9c0d1e2f"
ISSUE = "3e8c3f41-7d76-4f1b-8f41-4f5a6b7c8d9e"
SERVICE = "b1c2d3e4-5f60-4a7b-8c9d-0e1f2a3b4c5d"
PW = "c2d3e4f5-6071-4b8c-9d0e-1f2a3b4c5d6e"
OP = "7f3c5e1a-0b9d-4a4f-9c3d-5e6f7a8b9c0d"
AT = datetime(2026, 11, 29, 12, 0, 5, tzinfo=UTC)


def build(envelope: Callable[..., dict[str, Any]], principal: Principal) -> list[Message]:
    """Every runtime message, once each."""
    p = principal
    target = {"execution_workspace_id": WS, "project_workspace_id": PW}
    web = {**target, "service_name": "web"}
    return [
        ControlRuntime(principal=p, workspace_id=WS, action="start", service_index=0),
        GetRuntimeState(principal=p, workspace_id=WS, probe_health=True),
        ListRuntimeSummaries(principal=p, workspace_ids=[WS]),
        GetRuntimeServiceLog(principal=p, workspace_id=WS, service_id=SERVICE, tail=100),
        EnsureRunServices(principal=p, workspace_id=WS, run_id=RUN, agent_id=AGENT, issue_id=ISSUE),
        RunEndedHere(principal=p, run_id=RUN, released_service_ids=[SERVICE]),
        RunStarted(**envelope("run"), agent_id=AGENT, issue_id=ISSUE, workspace_id=WS),
        RunFinished(
            **envelope("run", 2),
            agent_id=AGENT,
            issue_id=ISSUE,
            workspace_id=WS,
            status="succeeded",
        ),
        RuntimeServiceStarting(
            **envelope("runtime_service"),
            **web,
            workspace_command_id="service:web",
            service_index=0,
            lifecycle="shared",
            scope_type="execution_workspace",
            scope_id=WS,
            reuse_key="9f2c4e6a8b0d1f3e5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f",
            command="python3 -m http.server $PORT --bind 127.0.0.1",
            cwd="/home/clipyard/worktrees/ACME-1",
            port=41000,
            stop_policy=StopPolicy(type="idle_timeout", idle_seconds=1800),
            started_by_run_id=RUN,
            owner_agent_id=AGENT,
        ),
        RuntimeServiceStarted(
            **envelope("runtime_service", 2),
            **web,
            pid=4242,
            port=41000,
            url="http://127.0.0.1:41000",
            started_at=AT,
        ),
        RuntimeServiceStartFailed(
            **envelope("runtime_service", 2),
            **web,
            error="service process exited before readiness",
            exit_code=1,
            stopped_at=AT,
        ),
        RuntimeServiceStopped(
            **envelope("runtime_service", 3),
            **web,
            stop_reason="stop",
            exit_signal=15,
            stopped_at=AT,
        ),
        RuntimeServiceFailed(
            **envelope("runtime_service", 3),
            **web,
            error="killed by signal 9",
            exit_signal=9,
            stopped_at=AT,
        ),
        RuntimeServiceAdopted(**envelope("runtime_service", 4), **web, pid=4242, port=41000),
        RuntimeServiceLeaseAcquired(
            **envelope("runtime_service", 5), **target, lease_run_id=RUN, lease_run_ids=[RUN]
        ),
        RuntimeServiceLeaseReleased(
            **envelope("runtime_service", 6), **target, lease_run_id=RUN, lease_run_ids=[]
        ),
        RuntimeServiceHealthChanged(
            **envelope("runtime_service", 7),
            **target,
            health_status="unhealthy",
            previous_health_status="healthy",
        ),
        RuntimeServiceDesiredStateChanged(
            **envelope("runtime_service"),
            **target,
            desired_state="manual",
            service_states={"0": "stopped", "1": "manual"},
        ),
        RuntimeProvisioningStarted(
            **envelope("runtime_provisioning", 2),
            execution_workspace_id=WS,
            operation_id=OP,
            command="pnpm install",
            started_at=AT,
        ),
        RuntimeProvisioningSucceeded(
            **envelope("runtime_provisioning", 3),
            execution_workspace_id=WS,
            operation_id=OP,
            provisioned_at=AT,
        ),
        RuntimeProvisioningFailed(
            **envelope("runtime_provisioning", 3),
            execution_workspace_id=WS,
            operation_id=OP,
            error="pnpm install exited with 1",
            failed_at=AT,
        ),
        EgressObserved(
            **envelope("egress"),
            **target,
            host="registry.npmjs.org",
            port=443,
            verdict="allowed",
            count=1,
            first_at=AT,
            last_at=AT,
        ),
        EgressTallied(
            **envelope("egress", 2),
            **target,
            host="example.com",
            port=53,
            verdict="denied",
            count=3,
            first_at=AT,
            last_at=AT,
        ),
    ]
