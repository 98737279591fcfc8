"""Strict twins of :mod:`contracts.workspace_config` for inbound HTTP bodies.

Each class subclasses its bus value (so it *is* one, and encodes the same) and refuses unknown
fields, nested ones included: a typo such as ``defaultmode`` answers 400 instead of silently
falling back to a default. Bus messages keep the tolerant bases (additive evolution).
"""

from __future__ import annotations

import msgspec

from contracts.http import EntityId
from contracts.workspace_config import (
    ExecutionWorkspaceConfigPatch,
    ExecutionWorkspacePolicy,
    ExecutionWorkspaceSettings,
    HttpReadiness,
    JobSpec,
    LogReadiness,
    PortSpec,
    RuntimeCommandSpec,
    RuntimeConfig,
    ServiceSpec,
    StopPolicy,
    TcpReadiness,
    WorkspaceStrategy,
)

__all__ = [
    "ExecutionWorkspaceConfigPatchIn",
    "ExecutionWorkspacePolicyIn",
    "ExecutionWorkspaceSettingsIn",
    "HttpReadinessIn",
    "JobSpecIn",
    "LogReadinessIn",
    "PortSpecIn",
    "ReadinessIn",
    "RuntimeCommandSpecIn",
    "RuntimeConfigIn",
    "ServiceSpecIn",
    "StopPolicyIn",
    "TcpReadinessIn",
    "WorkspaceStrategyIn",
]


class WorkspaceStrategyIn(WorkspaceStrategy, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict :class:`WorkspaceStrategy`."""


class ExecutionWorkspacePolicyIn(
    ExecutionWorkspacePolicy, frozen=True, kw_only=True, forbid_unknown_fields=True
):
    """Strict :class:`ExecutionWorkspacePolicy`."""

    default_project_workspace_id: EntityId | None = None
    workspace_strategy: WorkspaceStrategyIn = msgspec.field(default_factory=WorkspaceStrategyIn)


class ExecutionWorkspaceSettingsIn(
    ExecutionWorkspaceSettings, frozen=True, kw_only=True, forbid_unknown_fields=True
):
    """Strict :class:`ExecutionWorkspaceSettings`."""

    execution_workspace_id: EntityId | None = None
    workspace_strategy: WorkspaceStrategyIn | None = None


class PortSpecIn(PortSpec, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict :class:`PortSpec`."""


class HttpReadinessIn(HttpReadiness, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict :class:`HttpReadiness`."""


class TcpReadinessIn(TcpReadiness, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict :class:`TcpReadiness`."""


class LogReadinessIn(LogReadiness, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict :class:`LogReadiness`."""


ReadinessIn = HttpReadinessIn | TcpReadinessIn | LogReadinessIn


class StopPolicyIn(StopPolicy, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict :class:`StopPolicy`."""


class ServiceSpecIn(ServiceSpec, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict :class:`ServiceSpec`."""

    port: int | PortSpecIn | None = None
    readiness: ReadinessIn | None = None
    stop_policy: StopPolicyIn | None = None


class JobSpecIn(JobSpec, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict :class:`JobSpec`."""


class RuntimeCommandSpecIn(
    RuntimeCommandSpec, frozen=True, kw_only=True, forbid_unknown_fields=True
):
    """Strict :class:`RuntimeCommandSpec`."""

    port: int | PortSpecIn | None = None
    readiness: ReadinessIn | None = None
    stop_policy: StopPolicyIn | None = None


class RuntimeConfigIn(RuntimeConfig, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Strict :class:`RuntimeConfig`."""

    # Narrowed element types: read-only in practice (frozen), so the override is sound.
    services: list[ServiceSpecIn] = msgspec.field(default_factory=list)  # type: ignore[assignment]
    jobs: list[JobSpecIn] = msgspec.field(default_factory=list)  # type: ignore[assignment]
    commands: list[RuntimeCommandSpecIn] = msgspec.field(default_factory=list)  # type: ignore[assignment]


class ExecutionWorkspaceConfigPatchIn(
    ExecutionWorkspaceConfigPatch, frozen=True, kw_only=True, forbid_unknown_fields=True
):
    """Strict :class:`ExecutionWorkspaceConfigPatch`."""

    workspace_runtime: RuntimeConfigIn | msgspec.UnsetType | None = msgspec.UNSET
