"""The one place where the runtime-supervisor's stored domain events become public contracts.

Public: the lives of runtime service instances (``runtime_service.*``), the desired-state
changes of targets, runtime provisioning (``runtime_provisioning.*``), adapter slots
(``slot.*``) and what workspaces reached or were kept from (``egress.*``). Private (``None``):
the copies of other services' facts, spawn details, use stamps, runtime-control leases, and
workspace operations (queried, not published). Output never leaves in an event.
"""

# Event classes made by eventsourcing's ``@event`` decorator are invisible to mypy.
# mypy: disable-error-code=attr-defined

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contracts import egress_events as eg
from contracts import runtime_events as rt
from contracts import slot_events as se
from contracts.base import Event
from eventstore.envelope import Envelope, envelope
from runtime_supervisor.domain import AdapterSlot as A
from runtime_supervisor.domain import EgressSeen as E
from runtime_supervisor.domain import RuntimeService as S
from runtime_supervisor.domain import WorkspaceRuntime as W
from runtime_supervisor.domain.service_record import stop_policy_of
from runtime_supervisor.settings import SERVICE_NAME
from servicekit.publishing import ContractMap

__all__ = ["to_contract"]

_SERVICE = "runtime_service"
_SLOT = "slot"
_PROVISIONING = "runtime_provisioning"
_EGRESS = "egress"


def _env(e: Any, aggregate: str) -> Envelope:
    return envelope(e, aggregate=aggregate, company_id=e.tenant_id, service=SERVICE_NAME)


def _ws(e: Any) -> str | None:
    """The execution workspace the stored event is about."""
    found: str | None = (e.about or {}).get("execution_workspace_id")
    return found


def _pws(e: Any) -> str | None:
    """The project workspace the stored event is about."""
    found: str | None = (e.about or {}).get("project_workspace_id")
    return found


def _name(e: Any) -> str:
    """The name of the service the stored event is about."""
    return str((e.about or {}).get("service_name") or "")


def _agent(e: Any) -> str:
    return str((e.about or {}).get("agent_id") or "")


def _port(e: Any) -> int | None:
    port: int | None = (e.about or {}).get("port")
    return port


_MAPPERS: dict[type[Any], Callable[[Any], Event]] = {
    S.StartBegan: lambda e: rt.RuntimeServiceStarting(
        **_env(e, _SERVICE),
        execution_workspace_id=e.execution_workspace_id,
        project_workspace_id=e.project_workspace_id,
        service_name=e.service_name,
        workspace_command_id=e.workspace_command_id,
        service_index=e.service_index,
        lifecycle=e.lifecycle,
        scope_type=e.scope_type,
        scope_id=e.scope_id,
        reuse_key=e.reuse_key,
        command=e.command,
        cwd=e.cwd,
        port=e.port,
        stop_policy=stop_policy_of(e.stop_policy),
        started_by_run_id=e.started_by_run_id,
        owner_agent_id=e.owner_agent_id,
    ),
    S.Started: lambda e: rt.RuntimeServiceStarted(
        **_env(e, _SERVICE),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        service_name=_name(e),
        pid=e.pid,
        port=_port(e),
        url=e.url,
        started_at=e.at,
    ),
    S.StartFailed: lambda e: rt.RuntimeServiceStartFailed(
        **_env(e, _SERVICE),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        service_name=_name(e),
        error=e.error,
        exit_code=e.exit_code,
        exit_signal=e.exit_signal,
        stopped_at=e.at,
    ),
    S.Stopped: lambda e: rt.RuntimeServiceStopped(
        **_env(e, _SERVICE),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        service_name=_name(e),
        stop_reason=e.stop_reason,
        exit_code=e.exit_code,
        exit_signal=e.exit_signal,
        stopped_at=e.at,
    ),
    S.Failed: lambda e: rt.RuntimeServiceFailed(
        **_env(e, _SERVICE),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        service_name=_name(e),
        error=e.error,
        exit_code=e.exit_code,
        exit_signal=e.exit_signal,
        stopped_at=e.at,
    ),
    S.Adopted: lambda e: rt.RuntimeServiceAdopted(
        **_env(e, _SERVICE),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        service_name=_name(e),
        pid=e.pid,
        port=_port(e),
    ),
    S.LeaseAcquired: lambda e: rt.RuntimeServiceLeaseAcquired(
        **_env(e, _SERVICE),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        lease_run_id=e.lease_run_id,
        lease_run_ids=list(e.lease_run_ids),
    ),
    S.LeaseReleased: lambda e: rt.RuntimeServiceLeaseReleased(
        **_env(e, _SERVICE),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        lease_run_id=e.lease_run_id,
        lease_run_ids=list(e.lease_run_ids),
    ),
    S.HealthChanged: lambda e: rt.RuntimeServiceHealthChanged(
        **_env(e, _SERVICE),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        health_status=e.health_status,
        previous_health_status=e.previous,
    ),
    W.DesiredStateChanged: lambda e: rt.RuntimeServiceDesiredStateChanged(
        **_env(e, _SERVICE),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        desired_state=e.desired_state,
        service_states=dict(e.service_states),
    ),
    W.ProvisioningStarted: lambda e: rt.RuntimeProvisioningStarted(
        **_env(e, _PROVISIONING),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        operation_id=e.operation_id,
        command=e.command,
        started_at=e.at,
    ),
    W.ProvisioningSucceeded: lambda e: rt.RuntimeProvisioningSucceeded(
        **_env(e, _PROVISIONING),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        operation_id=e.operation_id,
        provisioned_at=e.at,
    ),
    W.ProvisioningFailed: lambda e: rt.RuntimeProvisioningFailed(
        **_env(e, _PROVISIONING),
        execution_workspace_id=_ws(e),
        project_workspace_id=_pws(e),
        operation_id=e.operation_id,
        error=e.error,
        failed_at=e.at,
    ),
    A.Granted: lambda e: se.SlotGranted(
        **_env(e, _SLOT),
        agent_id=e.agent_id,
        slot_type=e.slot_type,
        index=e.index,
        contained=e.contained,
        sandbox=e.sandbox,
    ),
    A.AdapterStarted: lambda e: se.SlotAdapterStarted(
        **_env(e, _SLOT),
        agent_id=_agent(e),
        workspace_id=e.workspace_id,
        pid=e.pid,
        pgid=e.pgid,
        deadline=e.deadline,
    ),
    A.AdapterFinished: lambda e: se.SlotAdapterFinished(
        **_env(e, _SLOT),
        agent_id=_agent(e),
        end=e.end,
        exit_code=e.exit_code,
        signal=e.signal,
        usage=e.usage,
        result=e.result,
        stdout_excerpt=e.stdout_excerpt,
        stderr_excerpt=e.stderr_excerpt,
        log_bytes=e.log_bytes,
        error=e.error,
        group_gone=e.group_gone,
    ),
    A.Released: lambda e: se.SlotReleased(**_env(e, _SLOT), agent_id=_agent(e)),
    E.Observed: lambda e: eg.EgressObserved(
        **_env(e, _EGRESS),
        execution_workspace_id=e.execution_workspace_id,
        project_workspace_id=e.project_workspace_id,
        host=e.host,
        port=e.port,
        verdict=e.verdict,
        count=e.count,
        first_at=e.first_at,
        last_at=e.last_at,
    ),
    E.Tallied: lambda e: eg.EgressTallied(
        **_env(e, _EGRESS),
        execution_workspace_id=e.execution_workspace_id,
        project_workspace_id=e.project_workspace_id,
        host=e.host,
        port=e.port,
        verdict=e.verdict,
        count=e.count,
        first_at=e.first_at,
        last_at=e.last_at,
    ),
}


to_contract = ContractMap(_MAPPERS)
"""The public event (with its envelope) for a stored event of the supervisor, or None when it
stays private."""
