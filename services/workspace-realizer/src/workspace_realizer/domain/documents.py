"""The stored (camelCase) shapes of the company-wide part's plain data, and the typed records its
use cases take.

The aggregates keep these as plain builtins (event attributes and snapshots store them as they
are), so each is a ``TypedDict``: a dict at run time, with its keys typed. The shapes are those of
the contract structs turned into builtins (``msgspec.to_builtins``) in :mod:`contracts.workspace_config`.
"""

from __future__ import annotations

from typing import Any, NotRequired, Required, TypedDict

__all__ = [
    "CommandSource",
    "EgressRuleDocument",
    "ExposeDocument",
    "IssueChanges",
    "IssueRevision",
    "IssueSettingsDocument",
    "NewIssue",
    "PolicyDocument",
    "PortDocument",
    "ProjectWorkspaceFields",
    "ReadinessDocument",
    "ResourceLimitsDocument",
    "RuntimeCommand",
    "RuntimeConfigDocument",
    "RuntimeEntryDocument",
    "StopPolicyDocument",
    "StrategyDocument",
    "WorkProductInput",
    "WorkProductRecord",
]


# -- runtime config (``RuntimeConfig``) ----------------------------------------------------------


class PortDocument(TypedDict, total=False):
    """``{type: "auto"}`` or ``{value, envKey?}`` (``PortSpec``)."""

    type: str
    value: int
    envKey: str


class ReadinessDocument(TypedDict, total=False):
    """A service's readiness check (``HttpReadiness``, ``TcpReadiness``, ``LogReadiness``)."""

    type: str
    urlTemplate: str
    pattern: str
    timeoutSec: float
    intervalMs: int


class StopPolicyDocument(TypedDict, total=False):
    """When a running service stops by itself (``StopPolicy``)."""

    type: str
    idleSeconds: int | None


class ResourceLimitsDocument(TypedDict, total=False):
    """What a contained service or job may use (``ResourceLimits``)."""

    memoryMb: int | None
    processes: int | None
    cpus: float | None


class ExposeDocument(TypedDict, total=False):
    """How a service is reached (the supervisor's): ``urlTemplate`` rather than the loopback port."""

    urlTemplate: str


class RuntimeEntryDocument(TypedDict, total=False):
    """A ``services``, ``jobs`` or ``commands`` entry as sent (``ServiceSpec``, ``JobSpec``,
    ``RuntimeCommandSpec``); :func:`~workspace_realizer.domain.runtime_config.normalize_runtime_config`
    checks it."""

    id: str | None
    name: str
    label: str
    title: str
    kind: str
    command: str
    cwd: str | None
    env: dict[str, str] | None
    port: int | PortDocument | None
    readiness: ReadinessDocument | None
    lifecycle: str | None
    reuseScope: str | None
    stopPolicy: StopPolicyDocument | None
    timeoutSec: float | None
    limits: ResourceLimitsDocument | None
    disabledReason: str | None
    desiredState: str | None
    expose: ExposeDocument | None


class RuntimeConfigDocument(TypedDict, total=False):
    """A runtime config: ``{services, jobs}`` or ``{commands}`` (``RuntimeConfig``)."""

    services: list[RuntimeEntryDocument]
    jobs: list[RuntimeEntryDocument]
    commands: list[RuntimeEntryDocument]


class CommandSource(TypedDict):
    """Where a normalized command came from: the list and the index in it."""

    key: str
    index: int


class RuntimeCommand(TypedDict):
    """A normalized runtime command (what the supervisor keeps a copy of), its keys in the order
    they are stored: ``id``, ``source`` and ``serviceIndex`` come last, and are always set."""

    kind: str
    name: str
    command: str
    cwd: str
    env: dict[str, str]
    disabledReason: str | None
    timeoutSec: NotRequired[float | None]
    lifecycle: NotRequired[str]
    reuseScope: NotRequired[str]
    port: NotRequired[int | PortDocument | None]
    readiness: NotRequired[ReadinessDocument | None]
    stopPolicy: NotRequired[StopPolicyDocument]
    expose: NotRequired[ExposeDocument | None]
    desiredState: NotRequired[str]
    id: NotRequired[str]
    source: NotRequired[CommandSource]
    serviceIndex: NotRequired[int | None]


# -- projects and issues -------------------------------------------------------------------------


class StrategyDocument(TypedDict, total=False):
    """How to produce an execution workspace (``WorkspaceStrategy``)."""

    type: str
    baseRef: str | None
    branchTemplate: str | None
    worktreeParentDir: str | None
    provisionCommand: str | None
    runtimeProvisionCommand: str | None
    teardownCommand: str | None


class EgressRuleDocument(TypedDict, total=False):
    """One destination a workspace's processes may reach (``EgressRule``)."""

    host: str
    port: int | None


class PolicyDocument(TypedDict, total=False):
    """A project's execution-workspace policy (``ExecutionWorkspacePolicy``)."""

    enabled: bool
    defaultMode: str
    allowIssueOverride: bool
    defaultProjectWorkspaceId: str | None
    workspaceStrategy: StrategyDocument | None
    egressAllowlist: list[EgressRuleDocument]


class IssueSettingsDocument(TypedDict, total=False):
    """An issue's request for a workspace (``ExecutionWorkspaceSettings``)."""

    mode: str
    executionWorkspaceId: str | None
    workspaceStrategy: StrategyDocument | None


class IssueRevision(TypedDict, total=False):
    """The revisable fields of an issue (``Issue.REVISABLE_FIELDS``): all of them for the record
    as it is, the ones that change for a revision."""

    title: str
    description: str | None
    priority: str | None
    parent_id: str | None
    project_workspace_id: str | None
    settings: IssueSettingsDocument | None


class IssueChanges(IssueRevision, total=False):
    """A patch of an issue: the fields an update sets (absent: unchanged)."""

    status: str
    assignee_agent_id: str | None
    comment: str


class NewIssue(TypedDict, total=False):
    """What an issue is created with; ``project_id`` and ``title`` are needed."""

    project_id: Required[str]
    title: Required[str]
    identifier: str | None
    status: str
    parent_id: str | None
    assignee_agent_id: str | None
    project_workspace_id: str | None
    settings: IssueSettingsDocument | None
    description: str | None
    priority: str | None
    comment: str | None


class WorkProductInput(TypedDict, total=False):
    """A work product as asked to be recorded (``AddWorkProduct``, camelCase)."""

    type: Required[str]
    url: str | None
    externalId: str | None
    title: str | None
    metadata: dict[str, Any]


class WorkProductRecord(TypedDict):
    """A stored work product (the ``product`` of ``Issue.WorkProductAdded``)."""

    id: str
    type: str
    url: str | None
    externalId: str | None
    title: str | None
    metadata: dict[str, Any]
    """The user's own JSON, stored and shown as sent."""
    executionWorkspaceId: str | None
    createdAt: str
    """ISO 8601."""


# -- project workspaces --------------------------------------------------------------------------


class ProjectWorkspaceFields(TypedDict, total=False):
    """The revisable fields of a project workspace: all of them to create one or for the record
    as it is, the ones that change for a revision."""

    name: str
    cwd: str | None
    repo_url: str | None
    repo_ref: str | None
    is_primary: bool
    setup_command: str | None
    cleanup_command: str | None
