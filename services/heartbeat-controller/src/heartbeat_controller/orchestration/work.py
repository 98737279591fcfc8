"""One active run as its task sees it: who and what it runs, and how far it got (a slot granted,
the adapter launched), which cleanup and recovery need."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from contracts.agents import AdapterType, HttpAdapterConfig, ProcessAdapterConfig
from heartbeat_controller.orchestration.ports import run_principal

if TYPE_CHECKING:
    from contracts.base import Principal
    from heartbeat_controller.domain.records import JsonObject
    from heartbeat_controller.domain.stage_detail import WorkspaceDetail
    from heartbeat_controller.orchestration.context import RunChannel

__all__ = ["RunWork", "adapter_config_of", "work_of_claim"]


def adapter_config_of(adapter_type: str, raw: Any) -> ProcessAdapterConfig | HttpAdapterConfig:
    """The typed adapter config (the application's own object, or its plain form)."""
    if isinstance(raw, ProcessAdapterConfig | HttpAdapterConfig):
        return raw
    if adapter_type == "http":
        return msgspec.convert(raw, HttpAdapterConfig, from_attributes=True)
    return msgspec.convert(raw, ProcessAdapterConfig, from_attributes=True)


@dataclass(eq=False, kw_only=True)
class RunWork:
    """A run driven by a task of this process."""

    run_id: str
    company_id: str
    agent_id: str
    issue_id: str | None
    workspace_id: str | None
    channel: RunChannel
    adapter_type: AdapterType = "process"
    config: ProcessAdapterConfig | HttpAdapterConfig | None = None
    """``ProcessAdapterConfig`` or ``HttpAdapterConfig`` (None for a recovered run)."""
    trusted: bool = False
    timeout_sec: int = 3600
    wake_reason: str | None = None
    payload: JsonObject | None = None
    stage: str = "workspace_resolution"
    slot_granted: bool = False
    launched: bool = False
    services: list[str] = field(default_factory=list)
    realized_detail: WorkspaceDetail | None = None
    node: str | None = None
    """The worker node of its workspace, where its services, slot and adapter are (None: this
    controller's own node; a recovered run's supervisor sends on to its slot's node)."""

    @property
    def principal(self) -> Principal:
        """The controller acting for this run."""
        return run_principal(self.company_id, self.run_id, self.issue_id)


def _field(obj: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def work_of_claim(claim: Any, channel: RunChannel) -> RunWork:
    """The work of a run ``claim_runnable`` started."""
    agent = claim.agent
    adapter_type: AdapterType = "http" if _field(agent, "adapter_type") == "http" else "process"
    config = adapter_config_of(adapter_type, _field(agent, "adapter_config"))
    agent_id = _field(claim, "agent_id") or _field(agent, "agent_id", "id")
    return RunWork(
        run_id=claim.run_id,
        company_id=claim.company_id,
        agent_id=str(agent_id),
        issue_id=claim.issue_id,
        workspace_id=claim.workspace_id,
        channel=channel,
        adapter_type=adapter_type,
        config=config,
        trusted=bool(_field(agent, "trusted", default=False)),
        timeout_sec=int(config.timeout_sec),
        wake_reason=claim.wake_reason,
        payload=claim.payload,
    )
