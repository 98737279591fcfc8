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
from dataclasses import dataclass
from functools import partial
from typing import Any

import msgspec

from contracts import run_events as re_
from contracts.base import Event
from eventstore.envelope import Envelope, envelope
from heartbeat_controller.domain import Agent as A
from heartbeat_controller.domain import Run as R
from heartbeat_controller.domain import WakeupRequest as W
from heartbeat_controller.settings import SERVICE_NAME
from servicekit.publishing import ContractMap

__all__ = ["to_contract"]


_envelope = partial(envelope, service=SERVICE_NAME)
"""The envelope fields of a public event of this service (``aggregate``, ``company_id`` given)."""


def _env(e: Any, aggregate: str) -> Envelope:
    return _envelope(e, aggregate=aggregate, company_id=e.tenant_id)


@dataclass(frozen=True, slots=True)
class RunAbout:
    """The run's agent, issue and workspace as its stored event recorded them."""

    agent_id: str
    issue_id: str | None
    workspace_id: str | None


def _about(e: Any) -> RunAbout:
    """What a run's event is about (stamped on it when it was stored)."""
    about = e.about or {}
    return RunAbout(
        agent_id=about.get("agent_id") or "",
        issue_id=about.get("issue_id"),
        workspace_id=about.get("workspace_id"),
    )


def _wakeup(e: Any) -> Event:
    if e.status == "coalesced":
        return re_.WakeupCoalesced(
            **_env(e, "wakeup"),
            agent_id=e.agent_id,
            source=e.source,
            wake_reason=e.wake_reason,
            issue_id=e.issue_id,
            queued_run_id=e.queued_run_id,
        )
    return re_.WakeupRequested(
        **_env(e, "wakeup"),
        agent_id=e.agent_id,
        source=e.source,
        wake_reason=e.wake_reason,
        issue_id=e.issue_id,
        queued_run_id=e.queued_run_id,
        idempotency_key=e.idempotency_key,
    )


def _agent_created(e: Any) -> Event:
    return re_.AgentCreated(
        **_env(e, "agent"),
        name=e.name,
        adapter_type=e.adapter_type,
        trust_level=e.trust_level,
        max_concurrent_runs=e.max_concurrent_runs,
        heartbeat_interval_sec=e.heartbeat_interval_sec,
    )


def _agent_updated(e: Any) -> Event:
    return re_.AgentUpdated(
        **_env(e, "agent"),
        name=e.name,
        adapter_type=e.adapter_type,
        trust_level=e.trust_level,
        max_concurrent_runs=e.max_concurrent_runs,
        heartbeat_interval_sec=e.heartbeat_interval_sec,
        changed_fields=list(e.changed_fields),
    )


def _run_stage_changed(e: Any) -> Event:
    about = _about(e)
    return re_.RunStageChanged(
        **_env(e, "run"),
        agent_id=about.agent_id,
        issue_id=about.issue_id,
        workspace_id=about.workspace_id,
        stage=e.stage,
        previous_stage=e.previous_stage,
        detail=msgspec.convert(e.detail, re_.RunStageDetail) if e.detail is not None else None,
    )


def _run_finished(e: Any) -> Event:
    about = _about(e)
    return re_.RunFinished(
        **_env(e, "run"),
        agent_id=about.agent_id,
        issue_id=about.issue_id,
        workspace_id=about.workspace_id,
        status=e.status,
        error_code=e.error_code,
        exit_code=e.exit_code,
    )


def _run_event(contract: Callable[..., Event], *, own_workspace: bool) -> Callable[[Any], Event]:
    """The mapper of a run event carrying only its envelope and what it is about (its own
    ``workspace_id`` where ``own_workspace``)."""

    def mapped(e: Any) -> Event:
        about = _about(e)
        if own_workspace:
            return contract(
                **_env(e, "run"),
                agent_id=about.agent_id,
                issue_id=about.issue_id,
                workspace_id=e.workspace_id,
            )
        return contract(**_env(e, "run"), agent_id=about.agent_id, issue_id=about.issue_id)

    return mapped


_MAPPERS: dict[type[Any], Callable[[Any], Event]] = {
    A.Created: _agent_created,
    A.Updated: _agent_updated,
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
    R.Started: _run_event(re_.RunStarted, own_workspace=True),
    R.StageChanged: _run_stage_changed,
    R.WorkspaceLeased: _run_event(re_.RunWorkspaceLeased, own_workspace=True),
    R.WorkspaceReleased: _run_event(re_.RunWorkspaceReleased, own_workspace=True),
    R.CancelRequested: _run_event(re_.RunCancelRequested, own_workspace=False),
    R.Finished: _run_finished,
}


to_contract = ContractMap(_MAPPERS)
"""The public event (with its envelope) for a stored event of the controller, or None when it
stays private."""
