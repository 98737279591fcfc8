"""Examples of heartbeat runs' messages: agents, wakes and runs (controller), adapter slots
(supervisor) and run tokens (gateway).

Loaded by ``examples.py``, which passes its envelope builder and principals in. ``run.started``
and ``run.finished`` are in ``runtime_examples.py`` (they came first, with the supervisor).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from contracts.agents import (
    AdapterLimits,
    CancelRun,
    CreateAgent,
    DeleteAgent,
    GetAgent,
    GetRun,
    ListAgents,
    ListRuns,
    RunFilters,
    UpdateAgent,
    WakeAgent,
)
from contracts.base import Actor, Message, Principal
from contracts.run_events import (
    AgentCreated,
    AgentDeleted,
    AgentUpdated,
    RunCancelRequested,
    RunQueued,
    RunStageChanged,
    RunStageDetail,
    RunWorkspaceLeased,
    RunWorkspaceReleased,
    WakeupCoalesced,
    WakeupRequested,
)
from contracts.run_tokens import MintRunToken
from contracts.slot_events import (
    SlotAdapterFinished,
    SlotAdapterStarted,
    SlotGranted,
    SlotReleased,
)
from contracts.slots import (
    AcquireSlot,
    GetRunLog,
    GetRunSlot,
    GetSlotHealth,
    KillAdapter,
    LaunchAdapter,
    ReleaseSlot,
)

COMPANY = "0b5f0c1e-4a43-4c8e-9c1e-1c2f3a4b5c6d"
WS = "6e2b4d0f-9a8c-4f3e-8b2c-4d5e6f7a8b9c"
RUN = "9b5e7a3c-2d1f-4c6b-9e5f-7a8b9c0d1e2f"
AGENT = "ac5e7a3c-2d1f-4c6b-9e5f-7a8b9c0d1e2f"
ISSUE = "3e8c3f41-7d76-4f1b-8f41-4f5a6b7c8d9e"
WAKEUP = "d4e5f607-1829-4a3b-8c4d-5e6f7a8b9c0d"
SLOT = "e5f60718-293a-4b4c-9d5e-6f7a8b9c0d1e"
AT = datetime(2026, 11, 29, 12, 0, 5, tzinfo=UTC)
DEADLINE = datetime(2026, 11, 29, 13, 0, 5, tzinfo=UTC)
CONTROLLER = Principal(company_id=COMPANY, actor=Actor(type="system", id="heartbeat-controller"))
RUN_TOKEN = Principal(
    company_id=COMPANY,
    actor=Actor(type="agent", id=AGENT),
    run_id=RUN,
    issue_id=ISSUE,
    run_bound=True,
)


def _agents(p: Principal) -> list[Message]:
    """Agent commands and queries."""
    return [
        CreateAgent(
            principal=p,
            name="coder",
            adapter_type="process",
            adapter_config={"command": ["python3", "agent.py"], "timeoutSec": 900},
            trust_level="untrusted",
            max_concurrent_runs=2,
            heartbeat_interval_sec=300,
        ),
        UpdateAgent(
            principal=p, agent_id=AGENT, trust_level="trusted", heartbeat_interval_sec=None
        ),
        DeleteAgent(principal=p, agent_id=AGENT),
        GetAgent(principal=p, agent_id=AGENT),
        ListAgents(principal=p, limit=20, offset=0),
        WakeAgent(
            principal=p,
            agent_id=AGENT,
            source="on_demand",
            reason="review the failing test",
            issue_id=ISSUE,
            payload={"hint": "tests/test_api.py"},
            idempotency_key="wake-1",
        ),
        GetRun(principal=RUN_TOKEN, run_id=RUN),
        ListRuns(
            principal=p,
            filters=RunFilters(agent_id=AGENT, issue_id=ISSUE, status="running"),
            limit=10,
            offset=0,
        ),
        CancelRun(principal=p, run_id=RUN),
    ]


def _run_events(envelope: Callable[..., dict[str, Any]]) -> list[Message]:
    """The controller's events of agents, wakes and runs."""
    agent = {
        "name": "coder",
        "adapter_type": "process",
        "trust_level": "untrusted",
        "max_concurrent_runs": 2,
        "heartbeat_interval_sec": 300,
    }
    run = {"agent_id": AGENT, "issue_id": ISSUE}
    return [
        AgentCreated(**envelope("agent"), **agent),
        AgentUpdated(**envelope("agent", 2), **agent, changed_fields=["trustLevel"]),
        AgentDeleted(**envelope("agent", 3)),
        WakeupRequested(
            **envelope("wakeup"),
            agent_id=AGENT,
            source="assignment",
            wake_reason="issue_assigned",
            issue_id=ISSUE,
            idempotency_key="wake-1",
            queued_run_id=RUN,
        ),
        WakeupCoalesced(
            **envelope("wakeup"),
            agent_id=AGENT,
            source="on_demand",
            wake_reason="ping",
            issue_id=ISSUE,
            queued_run_id=RUN,
        ),
        RunQueued(
            **envelope("run"),
            **run,
            wakeup_request_id=WAKEUP,
            source="assignment",
            wake_reason="issue_assigned",
        ),
        RunStageChanged(
            **envelope("run", 3),
            **run,
            workspace_id=WS,
            stage="slot_acquisition",
            previous_stage="workspace_resolution",
            # The golden sample's "attempts" predates the typed detail: decoding ignores it.
            detail=RunStageDetail(slot_type="local_stdio"),
        ),
        RunWorkspaceLeased(**envelope("run", 2), **run, workspace_id=WS),
        RunWorkspaceReleased(**envelope("run", 8), **run, workspace_id=WS),
        RunCancelRequested(**envelope("run", 6), **run),
    ]


def _slots(p: Principal) -> list[Message]:
    """The supervisor's slot commands and queries, and the gateway's run-token command."""
    return [
        AcquireSlot(principal=p, run_id=RUN, agent_id=AGENT, adapter_type="process", trusted=False),
        LaunchAdapter(
            principal=p,
            slot_id=SLOT,
            run_id=RUN,
            agent_id=AGENT,
            issue_id=ISSUE,
            workspace_id=WS,
            adapter_type="process",
            command=["python3", "agent.py"],
            env={"CLIPYARD_RUN_ID": RUN, "CLIPYARD_API_KEY": "example-token"},
            context={"runId": RUN},
            timeout_sec=900,
            limits=AdapterLimits(cpu_seconds=600, file_size_mb=512, open_files=1024),
            trusted=False,
        ),
        KillAdapter(principal=p, run_id=RUN, timed_out=True, reason="deadline passed"),
        ReleaseSlot(principal=p, run_id=RUN),
        GetRunSlot(principal=p, run_id=RUN),
        GetRunLog(principal=p, run_id=RUN, offset=1024, length=4096),
        GetSlotHealth(principal=p),
        MintRunToken(
            principal=p,
            run_id=RUN,
            agent_id=AGENT,
            issue_id=ISSUE,
            workspace_id=WS,
            expires_at=DEADLINE,
        ),
    ]


def _slot_events(envelope: Callable[..., dict[str, Any]]) -> list[Message]:
    """The supervisor's slot events."""
    return [
        SlotGranted(
            **envelope("slot"),
            agent_id=AGENT,
            slot_type="local_stdio",
            index=0,
            contained=True,
            sandbox="bwrap",
        ),
        SlotAdapterStarted(
            **envelope("slot", 2),
            agent_id=AGENT,
            workspace_id=WS,
            pid=4242,
            pgid=4242,
            deadline=DEADLINE,
        ),
        SlotAdapterFinished(
            **envelope("slot", 3),
            agent_id=AGENT,
            end="exited",
            exit_code=0,
            usage={"inputTokens": 1200, "outputTokens": 300},
            result={"summary": "fixed the test"},
            stdout_excerpt="done\n",
            stderr_excerpt="",
            log_bytes=2048,
            group_gone=True,
        ),
        SlotReleased(**envelope("slot", 4), agent_id=AGENT),
    ]


def build(envelope: Callable[..., dict[str, Any]], principal: Principal) -> list[Message]:
    """Every heartbeat-run message, once each."""
    return [
        *_agents(principal),
        *_run_events(envelope),
        *_slots(CONTROLLER),
        *_slot_events(envelope),
    ]
