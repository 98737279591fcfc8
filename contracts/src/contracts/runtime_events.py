"""Public events of runtime services and runtime provisioning (owner: runtime-supervisor).

Aggregate ``runtime_service``: one aggregate per started instance of a service (starting →
running | failed; running → stopped | failed), and the desired-state changes of a target, whose
``aggregateId`` is that target's runtime record (``executionWorkspaceId`` or
``projectWorkspaceId`` names the target). Aggregate ``runtime_provisioning``: the lazy runtime
provision command of an execution workspace (DECISIONS 1), ``aggregateId`` the same runtime record.

Ports and pids are not secrets and are carried; environment values never are (they may hold user
secrets): a service is described by its command and cwd only. A service's output stays in the
supervisor (its log and queries), never in an event.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

from contracts.base import Event
from contracts.workspace_config import DesiredState, StopPolicy

__all__ = [
    "HealthStatus",
    "RuntimeProvisioningFailed",
    "RuntimeProvisioningStarted",
    "RuntimeProvisioningSucceeded",
    "RuntimeServiceAdopted",
    "RuntimeServiceDesiredStateChanged",
    "RuntimeServiceFailed",
    "RuntimeServiceHealthChanged",
    "RuntimeServiceLeaseAcquired",
    "RuntimeServiceLeaseReleased",
    "RuntimeServiceStartFailed",
    "RuntimeServiceStarted",
    "RuntimeServiceStarting",
    "RuntimeServiceStopped",
]

HealthStatus = Literal["unknown", "healthy", "unhealthy"]


class RuntimeServiceStarting(Event, tag="runtime_service.starting.v1", frozen=True, kw_only=True):
    """A service instance was recorded ``starting`` (its port reserved) before its process
    started; readiness comes next."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    service_name: str
    workspace_command_id: str | None = None
    service_index: int | None = None
    lifecycle: str = "shared"
    """``shared | ephemeral``."""
    scope_type: str | None = None
    scope_id: str | None = None
    reuse_key: str | None = None
    command: str
    cwd: str
    port: int | None = None
    stop_policy: StopPolicy | None = None
    started_by_run_id: str | None = None
    owner_agent_id: str | None = None


class RuntimeServiceStarted(Event, tag="runtime_service.started.v1", frozen=True, kw_only=True):
    """The service passed readiness and is ``running`` (``healthy``) at ``url``."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    service_name: str
    pid: int | None = None
    port: int | None = None
    url: str | None = None
    started_at: datetime


class RuntimeServiceStartFailed(
    Event, tag="runtime_service.start_failed.v1", frozen=True, kw_only=True
):
    """The start failed before readiness (spawn error, early exit, readiness timeout): the
    instance is ``failed`` and its port released (DECISIONS 8)."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    service_name: str
    error: str
    exit_code: int | None = None
    exit_signal: int | None = None
    stopped_at: datetime


class RuntimeServiceStopped(Event, tag="runtime_service.stopped.v1", frozen=True, kw_only=True):
    """The service was stopped (by a stop, an idle timeout, a run's end, an archive) or exited by
    itself with status 0 or by SIGTERM; its port is released."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    service_name: str
    stop_reason: str
    """``stop``, ``restart``, ``idle_timeout``, ``run_finished``, ``archive``, ``stop_all``,
    ``exited``, ``ended_while_unsupervised``, ..."""
    exit_code: int | None = None
    exit_signal: int | None = None
    stopped_at: datetime


class RuntimeServiceFailed(Event, tag="runtime_service.failed.v1", frozen=True, kw_only=True):
    """A running service ended by itself otherwise than with status 0 or SIGTERM (a SIGKILL from
    outside included): ``failed``, with its exit status; its port is released."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    service_name: str
    error: str | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    stopped_at: datetime


class RuntimeServiceAdopted(Event, tag="runtime_service.adopted.v1", frozen=True, kw_only=True):
    """A restarted supervisor found the service's process alive (pid, start time and process
    group checked) and supervises it again, without restarting it (DECISIONS 7)."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    service_name: str
    pid: int | None = None
    port: int | None = None


class RuntimeServiceLeaseAcquired(
    Event, tag="runtime_service.lease_acquired.v1", frozen=True, kw_only=True
):
    """A run took a lease on the service; ``leaseRunIds`` are every run holding it now."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    lease_run_id: str
    lease_run_ids: list[str] = msgspec.field(default_factory=list)


class RuntimeServiceLeaseReleased(
    Event, tag="runtime_service.lease_released.v1", frozen=True, kw_only=True
):
    """A run's lease on the service was released; ``leaseRunIds`` are the runs still holding it."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    lease_run_id: str
    lease_run_ids: list[str] = msgspec.field(default_factory=list)


class RuntimeServiceHealthChanged(
    Event, tag="runtime_service.health_changed.v1", frozen=True, kw_only=True
):
    """A probe found the service's health changed."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    health_status: HealthStatus
    previous_health_status: HealthStatus


class RuntimeServiceDesiredStateChanged(
    Event, tag="runtime_service.desired_state_changed.v1", frozen=True, kw_only=True
):
    """A target's desired state changed (reference §6.5): the aggregate ``desiredState`` and the
    state of each service index (``"0"`` → ``running | stopped | manual``)."""

    execution_workspace_id: str | None
    project_workspace_id: str | None
    desired_state: DesiredState
    service_states: dict[str, DesiredState] = msgspec.field(default_factory=dict)


class RuntimeProvisioningStarted(
    Event, tag="runtime_provisioning.started.v1", frozen=True, kw_only=True
):
    """The lazy runtime provision command began, before the workspace's first service start."""

    execution_workspace_id: str | None
    project_workspace_id: str | None = None
    operation_id: str | None = None
    """The supervisor's workspace operation recording the command."""
    command: str
    started_at: datetime


class RuntimeProvisioningSucceeded(
    Event, tag="runtime_provisioning.succeeded.v1", frozen=True, kw_only=True
):
    """The runtime provision command succeeded: the workspace is ``provisioned``."""

    execution_workspace_id: str | None
    project_workspace_id: str | None = None
    operation_id: str | None = None
    provisioned_at: datetime


class RuntimeProvisioningFailed(
    Event, tag="runtime_provisioning.failed.v1", frozen=True, kw_only=True
):
    """The runtime provision command failed; the next start runs it again."""

    execution_workspace_id: str | None
    project_workspace_id: str | None = None
    operation_id: str | None = None
    error: str
    failed_at: datetime
