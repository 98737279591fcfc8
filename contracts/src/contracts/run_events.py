"""Public events of agents, wakes and heartbeat runs (owner: heartbeat-controller).

The supervisor and the gateway react to them (a finished run releases its service leases and its
token; a deleted agent's keys are revoked); the realizer follows which run holds a workspace
(``run.workspace_leased`` / ``run.workspace_released``: ``active`` while held, then ``idle`` or
``in_review``). Every stage change is an event, so a run's history shows its six stages.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from contracts.base import Event, Struct
from contracts.slots import SlotType

__all__ = [
    "AgentCreated",
    "AgentDeleted",
    "AgentUpdated",
    "RunCancelRequested",
    "RunFinished",
    "RunQueued",
    "RunStageChanged",
    "RunStageDetail",
    "RunStarted",
    "RunStatus",
    "RunWorkspaceLeased",
    "RunWorkspaceReleased",
    "WakeupCoalesced",
    "WakeupRequested",
]

RunStatus = Literal["queued", "running", "succeeded", "failed", "cancelled", "timed_out"]
RunStageName = Literal[
    "wakeup",
    "workspace_resolution",
    "slot_acquisition",
    "adapter_launch",
    "result_collection",
    "cleanup",
]


class AgentCreated(Event, tag="agent.created.v1", frozen=True, kw_only=True):
    """An agent was created (its adapter config is not published: it may hold headers)."""

    name: str
    adapter_type: Literal["process", "http"]
    trust_level: Literal["untrusted", "trusted"]
    max_concurrent_runs: int
    heartbeat_interval_sec: int | None = None


class AgentUpdated(Event, tag="agent.updated.v1", frozen=True, kw_only=True):
    """An agent's settings changed (``changedFields`` names them)."""

    name: str
    adapter_type: Literal["process", "http"]
    trust_level: Literal["untrusted", "trusted"]
    max_concurrent_runs: int
    heartbeat_interval_sec: int | None = None
    changed_fields: list[str]


class AgentDeleted(Event, tag="agent.deleted.v1", frozen=True, kw_only=True):
    """An agent was deleted: its keys are to be revoked, its runs were cancelled."""


class WakeupRequested(Event, tag="wakeup.requested.v1", frozen=True, kw_only=True):
    """A wake was accepted (``aggregateId`` is the wakeup request) and queued ``queuedRunId``."""

    agent_id: str
    source: Literal["timer", "assignment", "on_demand", "automation"]
    wake_reason: str | None = None
    issue_id: str | None = None
    idempotency_key: str | None = None
    queued_run_id: str


class WakeupCoalesced(Event, tag="wakeup.coalesced.v1", frozen=True, kw_only=True):
    """A wake joined a run already queued for the same agent and issue."""

    agent_id: str
    source: Literal["timer", "assignment", "on_demand", "automation"]
    wake_reason: str | None = None
    issue_id: str | None = None
    queued_run_id: str


class RunQueued(Event, tag="run.queued.v1", frozen=True, kw_only=True):
    """A run was queued by a wake (stage ``wakeup``; ``aggregateId`` is the run)."""

    agent_id: str
    issue_id: str | None = None
    wakeup_request_id: str
    source: Literal["timer", "assignment", "on_demand", "automation"]
    wake_reason: str | None = None


class RunStarted(Event, tag="run.started.v1", frozen=True, kw_only=True):
    """A run left the queue and is running (``workspaceId``: the workspace it holds, if any yet)."""

    agent_id: str
    issue_id: str | None = None
    workspace_id: str | None = None


class RunStageDetail(Struct, frozen=True, kw_only=True):
    """What a stage change did (``RunStageChanged.detail``): the fields of one kind of change,
    the others left out of the JSON (unset).

    Entering ``slot_acquisition`` after the workspace was realized: ``workspaceId``,
    ``created``, ``services``. Entering ``adapter_launch``: the slot granted (``slotId``,
    ``slotType``, ``contained``, ``sandbox``). Entering ``result_collection``: the adapter's
    ``pid``, ``pgid`` and ``deadline`` (ISO 8601), or how it ``end``-ed when its end came first.
    Entering ``cleanup``: the run's ``status`` and ``errorCode``.
    """

    workspace_id: str | msgspec.UnsetType = msgspec.UNSET
    created: bool | msgspec.UnsetType = msgspec.UNSET
    services: list[str] | msgspec.UnsetType = msgspec.UNSET
    slot_id: str | msgspec.UnsetType = msgspec.UNSET
    slot_type: SlotType | msgspec.UnsetType = msgspec.UNSET
    contained: bool | msgspec.UnsetType = msgspec.UNSET
    sandbox: Literal["bwrap", "user_only", "none"] | msgspec.UnsetType = msgspec.UNSET
    pid: int | msgspec.UnsetType | None = msgspec.UNSET
    pgid: int | msgspec.UnsetType | None = msgspec.UNSET
    deadline: str | msgspec.UnsetType = msgspec.UNSET
    end: str | msgspec.UnsetType = msgspec.UNSET
    status: str | msgspec.UnsetType = msgspec.UNSET
    error_code: str | msgspec.UnsetType | None = msgspec.UNSET


class RunStageChanged(Event, tag="run.stage_changed.v1", frozen=True, kw_only=True):
    """A run entered one of the six stages (ARCHITECTURE §4.3); ``detail`` says what it did."""

    agent_id: str
    issue_id: str | None = None
    workspace_id: str | None = None
    stage: RunStageName
    previous_stage: RunStageName | None = None
    detail: RunStageDetail | None = None


class RunWorkspaceLeased(Event, tag="run.workspace_leased.v1", frozen=True, kw_only=True):
    """A run took the run lease of a workspace (one run per workspace at a time)."""

    agent_id: str
    issue_id: str | None = None
    workspace_id: str


class RunWorkspaceReleased(Event, tag="run.workspace_released.v1", frozen=True, kw_only=True):
    """A run gave its workspace's run lease back (the next waiting run may take it)."""

    agent_id: str
    issue_id: str | None = None
    workspace_id: str


class RunCancelRequested(Event, tag="run.cancel_requested.v1", frozen=True, kw_only=True):
    """Someone asked to cancel a run; it ends ``cancelled`` through cleanup."""

    agent_id: str
    issue_id: str | None = None


class RunFinished(Event, tag="run.finished.v1", frozen=True, kw_only=True):
    """A run ended, whatever the outcome, after its cleanup; its leases and token are released."""

    agent_id: str
    issue_id: str | None = None
    workspace_id: str | None = None
    status: RunStatus
    error_code: str | None = None
    exit_code: int | None = None
