"""Bus commands, queries and views of agents, wakes and runs (owner: heartbeat-controller).

An agent is configured once (adapter type and config, trust level, limits, optional heartbeat
interval); a wake asks it to run, for an issue or not; a run goes through the six stages of
ARCHITECTURE §4.3. Views are what the gateway answers over HTTP (API.md "Agents, wakes, runs").
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from contracts.base import Command, Query, Struct
from contracts.workspace_config import EgressAllowlist

__all__ = [
    "AdapterConfig",
    "AdapterLimits",
    "AdapterType",
    "AgentView",
    "CancelRun",
    "CreateAgent",
    "DeleteAgent",
    "GetAgent",
    "GetRun",
    "HeartbeatInterval",
    "HttpAdapterConfig",
    "ListAgents",
    "ListRuns",
    "ProcessAdapterConfig",
    "RunErrorCode",
    "RunFilters",
    "RunStage",
    "RunStageEntry",
    "RunStatusName",
    "RunView",
    "TrustLevel",
    "UpdateAgent",
    "WakeAccepted",
    "WakeAgent",
    "WakeSource",
    "WakeupStatus",
]

AdapterType = Literal["process", "http"]
TrustLevel = Literal["untrusted", "trusted"]
WakeSource = Literal["timer", "assignment", "on_demand", "automation"]
WakeupStatus = Literal["queued", "coalesced", "claimed", "completed", "failed", "cancelled"]
RunStatusName = Literal["queued", "running", "succeeded", "failed", "cancelled", "timed_out"]
RunStage = Literal[
    "wakeup",
    "workspace_resolution",
    "slot_acquisition",
    "adapter_launch",
    "result_collection",
    "cleanup",
]
RunErrorCode = Literal[
    "workspace_validation_failed",
    "low_trust_violation",
    "runtime_services_failed",
    "slot_unavailable",
    "run_token_unavailable",
    "adapter_failed",
    "adapter_launch_failed",
    "timed_out",
    "cancelled",
    "process_detached",
    "agent_deleted",
    "node_unreachable",
]
"""Why a run did not succeed (``RunView.errorCode``); ``node_unreachable``: the worker node of
its workspace did not answer (the message names it)."""

TimeoutSec = Annotated[int, msgspec.Meta(ge=1, le=7 * 24 * 3600)]
HeartbeatInterval = Annotated[int, msgspec.Meta(ge=10, le=30 * 24 * 3600)]
"""Seconds between an agent's timer wakes: 10 s to 30 days."""


class AdapterLimits(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Resource limits of an adapter process (applied to untrusted agents' slots)."""

    cpu_seconds: Annotated[int, msgspec.Meta(ge=1, le=7 * 24 * 3600)] | None = None
    file_size_mb: Annotated[int, msgspec.Meta(ge=1, le=1_048_576)] | None = None
    open_files: Annotated[int, msgspec.Meta(ge=16, le=1_048_576)] | None = None
    memory_mb: Annotated[int, msgspec.Meta(ge=16, le=16_777_216)] | None = None
    """Optional: an address-space limit breaks runtimes that reserve much (V8, the JVM)."""


class ProcessAdapterConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``adapterType: process``: the argv run in the workspace's directory."""

    command: Annotated[list[str], msgspec.Meta(min_length=1)]
    env: dict[str, str] = msgspec.field(default_factory=dict)
    timeout_sec: TimeoutSec = 3600
    limits: AdapterLimits = msgspec.field(default_factory=AdapterLimits)
    egress_allowlist: EgressAllowlist = msgspec.field(default_factory=list)
    """Destinations added to its workspace's allowlist while one of its runs holds it
    (docs/design/isolation.md); they apply to everything in the workspace's namespace then."""


class HttpAdapterConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``adapterType: http``: the run's context POSTed as JSON to ``url``; the JSON answer is the
    result."""

    url: str
    timeout_sec: TimeoutSec = 3600
    headers: dict[str, str] = msgspec.field(default_factory=dict)


AdapterConfig = ProcessAdapterConfig | HttpAdapterConfig


class AgentView(Struct, frozen=True, kw_only=True):
    """An agent (API.md resource ``agent``). ``adapterConfig`` is the shape of its type."""

    id: str
    company_id: str
    name: str
    adapter_type: AdapterType
    adapter_config: dict[str, Any]
    trust_level: TrustLevel
    max_concurrent_runs: int
    heartbeat_interval_sec: int | None
    created_at: datetime
    updated_at: datetime


class RunView(Struct, frozen=True, kw_only=True):
    """A run (API.md ``GET /api/runs/{runId}``). List rows carry no excerpts, usage or result."""

    id: str
    company_id: str
    agent_id: str
    issue_id: str | None
    execution_workspace_id: str | None
    wakeup_request_id: str | None
    source: WakeSource
    wake_reason: str | None
    status: RunStatusName
    stage: RunStage
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    exit_code: int | None
    signal: str | None
    error_code: str | None
    error: str | None
    stdout_excerpt: str | None
    stderr_excerpt: str | None
    usage: dict[str, Any] | None
    result: Any
    log_bytes: int | None
    coalesced_count: int
    cancel_requested: bool
    created_at: datetime
    updated_at: datetime
    stages: list[RunStageEntry] = []
    """Each stage the run entered and when, in order (the detail only; list rows have none)."""


class RunStageEntry(Struct, frozen=True, kw_only=True):
    """A stage a run entered, and when."""

    stage: RunStage
    entered_at: datetime


class WakeAccepted(Struct, frozen=True, kw_only=True):
    """The answer to a wake: the run it queued, or the queued run it joined (``coalesced``)."""

    run_id: str
    wakeup_request_id: str
    status: WakeupStatus


class RunFilters(Struct, frozen=True, kw_only=True):
    """Filters of ``GET /api/companies/{companyId}/runs``."""

    agent_id: str | None = None
    issue_id: str | None = None
    status: RunStatusName | None = None


# Commands and queries (ws.cmd.agent.*, ws.qry.agent.*, ws.cmd.run.*, ws.qry.run.*).


class CreateAgent(Command, tag="agent.create.v1", frozen=True, kw_only=True):
    """Create an agent in the principal's company → ``AgentView``. ``adapterConfig`` is checked
    against ``adapterType`` (422 ``validation_failed`` naming the field)."""

    name: str
    adapter_type: AdapterType
    adapter_config: dict[str, Any]
    trust_level: TrustLevel = "untrusted"
    max_concurrent_runs: Annotated[int, msgspec.Meta(ge=1, le=50)] = 1
    heartbeat_interval_sec: HeartbeatInterval | None = None


class UpdateAgent(Command, tag="agent.update.v1", frozen=True, kw_only=True):
    """Change an agent → ``AgentView``; an absent field stays, ``heartbeatIntervalSec: null``
    stops its timer."""

    agent_id: str
    name: str | msgspec.UnsetType = msgspec.UNSET
    adapter_type: AdapterType | msgspec.UnsetType = msgspec.UNSET
    adapter_config: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    trust_level: TrustLevel | msgspec.UnsetType = msgspec.UNSET
    max_concurrent_runs: Annotated[int, msgspec.Meta(ge=1, le=50)] | msgspec.UnsetType = (
        msgspec.UNSET
    )
    heartbeat_interval_sec: HeartbeatInterval | msgspec.UnsetType | None = msgspec.UNSET


class DeleteAgent(Command, tag="agent.delete.v1", frozen=True, kw_only=True):
    """Delete an agent → ``None``: its queued runs are cancelled, its running ones cancelled
    through cleanup; the gateway revokes its keys when it hears ``agent.deleted.v1``."""

    agent_id: str


class GetAgent(Query, tag="agent.get.v1", frozen=True, kw_only=True):
    """One agent of the principal's company → ``AgentView`` (another company's: 404). The
    gateway asks it before creating an agent key."""

    agent_id: str


class ListAgents(Query, tag="agent.list.v1", frozen=True, kw_only=True):
    """The company's agents, by creation → ``Page[AgentView]``."""

    limit: int = 50
    offset: int = 0


class WakeAgent(Command, tag="agent.wake.v1", frozen=True, kw_only=True):
    """Wake an agent → ``WakeAccepted``. An agent principal may wake only itself (403).

    ``idempotencyKey``: the same key for the same agent answers the first wake's run. A wake for
    an agent and issue (or no issue) that already has a ``queued`` run joins it (``coalesced``).
    """

    agent_id: str
    source: WakeSource = "on_demand"
    reason: str | None = None
    issue_id: str | None = None
    payload: dict[str, Any] | None = None
    idempotency_key: str | None = None


class GetRun(Query, tag="run.get.v1", frozen=True, kw_only=True):
    """One run of the principal's company → ``RunView``."""

    run_id: str


class ListRuns(Query, tag="run.list.v1", frozen=True, kw_only=True):
    """The company's runs, newest first → ``Page[RunView]`` (rows without excerpts, usage and
    result)."""

    filters: RunFilters = msgspec.field(default_factory=RunFilters)
    limit: int = 50
    offset: int = 0


class CancelRun(Command, tag="run.cancel.v1", frozen=True, kw_only=True):
    """Cancel a run → ``RunView``: a queued run ends ``cancelled`` at once; a running one has its
    adapter's process group killed and goes through cleanup. A finished run: 409."""

    run_id: str
