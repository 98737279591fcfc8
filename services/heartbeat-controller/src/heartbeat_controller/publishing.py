"""The one place where the heartbeat-controller's stored domain events become public contracts.

Public (``contracts.run_events``): agents created, updated (without their adapter config: it may
hold headers and environment) and deleted; wakes requested or coalesced; runs queued, started,
each stage change, workspace run leases taken and given back, cancel requests, and the finish.
Private (``None``): wakeup claims and closes, a run joined by a coalesced wake, waiting for a
workspace, the slot granted, the adapter launched, the result collected (the supervisor
publishes its own ``slot.*`` events), and the copies of the realizer's issues.
"""

# Event classes made by eventsourcing's ``@event`` decorator are invisible to mypy.
# mypy: disable-error-code=attr-defined

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contracts import run_events as re_
from contracts.base import Event
from eventstore.envelope import envelope
from heartbeat_controller.domain import Agent as A
from heartbeat_controller.domain import Run as R
from heartbeat_controller.domain import WakeupRequest as W
from heartbeat_controller.settings import SERVICE_NAME

__all__ = ["to_contract"]


def _env(e: Any, aggregate: str) -> dict[str, Any]:
    fields: dict[str, Any] = envelope(
        e, aggregate=aggregate, company_id=e.tenant_id, service=SERVICE_NAME
    )
    return fields


def _about(e: Any) -> dict[str, Any]:
    about = e.about or {}
    return {"agent_id": about.get("agent_id") or "", "issue_id": about.get("issue_id")}


def _workspace(e: Any) -> str | None:
    workspace: str | None = (e.about or {}).get("workspace_id")
    return workspace


def _wakeup(e: Any) -> Event:
    common = {
        **_env(e, "wakeup"),
        "agent_id": e.agent_id,
        "source": e.source,
        "wake_reason": e.wake_reason,
        "issue_id": e.issue_id,
        "queued_run_id": e.queued_run_id,
    }
    if e.status == "coalesced":
        return re_.WakeupCoalesced(**common)
    return re_.WakeupRequested(**common, idempotency_key=e.idempotency_key)


def _agent_record(e: Any) -> dict[str, Any]:
    return {
        "name": e.name,
        "adapter_type": e.adapter_type,
        "trust_level": e.trust_level,
        "max_concurrent_runs": e.max_concurrent_runs,
        "heartbeat_interval_sec": e.heartbeat_interval_sec,
    }


_MAPPERS: dict[type[Any], Callable[[Any], Event]] = {
    A.Created: lambda e: re_.AgentCreated(**_env(e, "agent"), **_agent_record(e)),
    A.Updated: lambda e: re_.AgentUpdated(
        **_env(e, "agent"), **_agent_record(e), changed_fields=list(e.changed_fields)
    ),
    A.Deleted: lambda e: re_.AgentDeleted(**_env(e, "agent")),
    W.Requested: _wakeup,
    R.Queued: lambda e: re_.RunQueued(
        **_env(e, "run"),
        agent_id=e.agent_id,
        issue_id=e.issue_id,
        wakeup_request_id=e.wakeup_request_id,
        source=e.source,
        wake_reason=e.wake_reason,
    ),
    R.Started: lambda e: re_.RunStarted(**_env(e, "run"), **_about(e), workspace_id=e.workspace_id),
    R.StageChanged: lambda e: re_.RunStageChanged(
        **_env(e, "run"),
        **_about(e),
        workspace_id=_workspace(e),
        stage=e.stage,
        previous_stage=e.previous_stage,
        detail=dict(e.detail) if e.detail is not None else None,
    ),
    R.WorkspaceLeased: lambda e: re_.RunWorkspaceLeased(
        **_env(e, "run"), **_about(e), workspace_id=e.workspace_id
    ),
    R.WorkspaceReleased: lambda e: re_.RunWorkspaceReleased(
        **_env(e, "run"), **_about(e), workspace_id=e.workspace_id
    ),
    R.CancelRequested: lambda e: re_.RunCancelRequested(**_env(e, "run"), **_about(e)),
    R.Finished: lambda e: re_.RunFinished(
        **_env(e, "run"),
        **_about(e),
        workspace_id=_workspace(e),
        status=e.status,
        error_code=e.error_code,
        exit_code=e.exit_code,
    ),
}


def to_contract(domain_event: Any) -> Event | None:
    """The public event for a stored one, or ``None`` when it stays private.

    Args:
        domain_event: A stored domain event of the controller.

    Returns:
        The contract event (with its envelope), or None.
    """
    mapper = _MAPPERS.get(type(domain_event))
    return mapper(domain_event) if mapper is not None else None
