"""Inbound HTTP bodies of agents, wakes and runs, and the composed ``heartbeat-context`` view
(API.md "Agents, wakes, runs"; ``GET /api/issues/{issueId}/heartbeat-context``).

``adapterConfig`` is an object whose shape follows ``adapterType``
(:class:`contracts.agents.ProcessAdapterConfig` or :class:`contracts.agents.HttpAdapterConfig`);
the controller checks it and answers 400 ``validation_failed`` naming the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, get_args

import msgspec

from contracts.agents import AdapterType, HeartbeatInterval, RunView, TrustLevel, WakeSource
from contracts.base import Struct
from contracts.execution_views import RuntimeServiceBrief
from contracts.http import EntityId, Name, StrictBody
from contracts.workspace_views import Issue

__all__ = [
    "CreateAgentBody",
    "HeartbeatContext",
    "HeartbeatWorkspace",
    "UpdateAgentBody",
    "WakeBody",
]


class CreateAgentBody(StrictBody, frozen=True, kw_only=True):
    """``POST /api/companies/{companyId}/agents``."""

    name: Name
    adapter_type: AdapterType
    adapter_config: dict[str, Any]
    trust_level: TrustLevel = "untrusted"
    max_concurrent_runs: Annotated[int, msgspec.Meta(ge=1, le=50)] = 1
    heartbeat_interval_sec: HeartbeatInterval | None = None


class UpdateAgentBody(StrictBody, frozen=True, kw_only=True):
    """``PATCH /api/agents/{agentId}``: an absent field stays as it is."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    adapter_type: AdapterType | msgspec.UnsetType = msgspec.UNSET
    adapter_config: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    trust_level: TrustLevel | msgspec.UnsetType = msgspec.UNSET
    max_concurrent_runs: Annotated[int, msgspec.Meta(ge=1, le=50)] | msgspec.UnsetType = (
        msgspec.UNSET
    )
    heartbeat_interval_sec: HeartbeatInterval | msgspec.UnsetType | None = msgspec.UNSET


class WakeBody(StrictBody, frozen=True, kw_only=True):
    """``POST /api/agents/{agentId}/wakeup`` (alias ``/wake``)."""

    source: WakeSource = "on_demand"
    reason: Annotated[str, msgspec.Meta(max_length=2000)] | None = None
    issue_id: EntityId | None = None
    payload: dict[str, Any] | None = None
    idempotency_key: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    wake_reason: Annotated[str, msgspec.Meta(max_length=2000)] | None = None
    """The reference's name for why (``{"wakeReason": "on_demand"}`` in its guides): a wake
    source's name sets ``source`` when ``source`` is left at its default, and the text is the
    ``reason`` when none is given."""

    def command_fields(self) -> dict[str, Any]:
        """The fields of the ``WakeAgent`` command this body asks for (``wakeReason`` folded)."""
        fields = msgspec.structs.asdict(self)
        wake_reason = fields.pop("wake_reason")
        if wake_reason is None:
            return fields
        if self.source == "on_demand" and wake_reason in get_args(WakeSource):
            fields["source"] = wake_reason
        if self.reason is None:
            fields["reason"] = wake_reason
        return fields


class HeartbeatWorkspace(Struct, frozen=True, kw_only=True):
    """The issue's current execution workspace, as an agent needs it."""

    id: str
    cwd: str | None
    branch_name: str | None
    base_ref: str | None
    status: str
    runtime_services: list[RuntimeServiceBrief] = msgspec.field(default_factory=list)
    node_id: str | None = None
    """The worker node it lives on."""
    node_state: Literal["ready", "unreachable"] = "ready"
    """``unreachable`` while that node does not answer: nothing in the workspace can be done."""


class HeartbeatContext(Struct, frozen=True, kw_only=True):
    """``GET /api/issues/{issueId}/heartbeat-context``: the issue, its current workspace and the
    run (the run token's own run; for other keys the issue's newest run)."""

    issue: Issue
    current_execution_workspace: HeartbeatWorkspace | None
    run: RunView | None
    generated_at: datetime
