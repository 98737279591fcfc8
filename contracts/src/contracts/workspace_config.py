"""Configuration values of projects, project workspaces, issues and execution workspaces.

These are plain values shared by HTTP bodies, bus messages and events (API.md: ``executionWorkspacePolicy``,
``executionWorkspaceSettings``, ``runtimeConfig``; reference §1.3-§1.6, §6.1). They tolerate unknown
fields (bus evolution); the gateway's strict twins in :mod:`contracts.workspace_inputs` refuse them
at the HTTP edge.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from contracts.base import Struct

__all__ = [
    "CommandKind",
    "DesiredState",
    "EgressAllowlist",
    "EgressRule",
    "ExecutionWorkspaceConfig",
    "ExecutionWorkspaceConfigPatch",
    "ExecutionWorkspacePolicy",
    "ExecutionWorkspaceSettings",
    "HttpReadiness",
    "IssueWorkspaceMode",
    "JobSpec",
    "LogReadiness",
    "ManagedCheckout",
    "ManagedCheckoutState",
    "PortSpec",
    "ProjectDefaultMode",
    "Readiness",
    "ResourceLimits",
    "RuntimeCommandSpec",
    "RuntimeConfig",
    "ServiceLifecycle",
    "ServiceSpec",
    "StopPolicy",
    "StrategyType",
    "TcpReadiness",
    "WorkspaceStrategy",
]

StrategyType = Literal["project_primary", "git_worktree", "adapter_managed", "cloud_sandbox"]
"""How a checkout is produced (reference §2 ``ExecutionWorkspaceStrategyType``)."""

ProjectDefaultMode = Literal[
    "shared_workspace", "isolated_workspace", "operator_branch", "adapter_default"
]
"""A project's default mode (reference §2)."""

IssueWorkspaceMode = Literal[
    "inherit",
    "shared_workspace",
    "isolated_workspace",
    "operator_branch",
    "reuse_existing",
    "agent_default",
]
"""The mode an issue (or a realize request) asks for; ``inherit`` = the project's default."""

ManagedCheckoutState = Literal["none", "cloning", "ready", "failed"]
DesiredState = Literal["running", "stopped", "manual"]
ServiceLifecycle = Literal["shared", "ephemeral"]
CommandKind = Literal["service", "job"]


class WorkspaceStrategy(Struct, frozen=True, kw_only=True):
    """How to produce an execution workspace (reference §1.6).

    ``branchTemplate`` may use ``{{issue.identifier}}``, ``{{issue.title}}``, ``{{agent.name}}``;
    ``worktreeParentDir`` defaults to ``$CLIPYARD_HOME/worktrees/<projectWorkspaceId>``.
    """

    type: StrategyType = "project_primary"
    base_ref: str | None = None
    branch_template: str | None = None
    worktree_parent_dir: str | None = None
    provision_command: str | None = None
    runtime_provision_command: str | None = None
    teardown_command: str | None = None


EGRESS_HOST_PATTERN: Final = (
    r"^((\*\.)?[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}"
    r"[A-Za-z0-9_])?)*\.?|[0-9]{1,3}(\.[0-9]{1,3}){3}(/[0-9]{1,2})?)$"
)
"""A DNS name, ``*.`` and a name (its subdomains), an IPv4 address or an IPv4 network."""


class EgressRule(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One destination a workspace's processes may reach (docs/design/isolation.md): ``host`` a
    DNS name (``registry.npmjs.org``), ``*.`` a name for its subdomains, an IPv4 address or
    network (``10.0.0.0/8``); ``port`` one TCP port, or every port when absent."""

    host: Annotated[str, msgspec.Meta(min_length=1, max_length=253, pattern=EGRESS_HOST_PATTERN)]
    port: Annotated[int, msgspec.Meta(ge=1, le=65535)] | None = None


EgressAllowlist = Annotated[list[EgressRule], msgspec.Meta(max_length=256)]


class ExecutionWorkspacePolicy(Struct, frozen=True, kw_only=True):
    """A project's execution-workspace policy (API.md; reference §1.3). ``egressAllowlist``
    holds for every network namespace of the project's workspaces (execution and project
    workspaces alike): nothing else outside is reachable from them."""

    enabled: bool = True
    default_mode: ProjectDefaultMode = "shared_workspace"
    allow_issue_override: bool = True
    default_project_workspace_id: str | None = None
    workspace_strategy: WorkspaceStrategy = msgspec.field(default_factory=WorkspaceStrategy)
    egress_allowlist: EgressAllowlist = msgspec.field(default_factory=list)


class ExecutionWorkspaceSettings(Struct, frozen=True, kw_only=True):
    """An issue's request for a workspace (API.md; reference §1.4).

    Agents may change ``mode`` only; ``workspaceStrategy`` (it holds commands) is board-only.
    """

    mode: IssueWorkspaceMode = "inherit"
    execution_workspace_id: str | None = None
    """The workspace to bind to with ``reuse_existing``."""
    workspace_strategy: WorkspaceStrategy | None = None


class PortSpec(Struct, frozen=True, kw_only=True):
    """``{type: "auto"}`` or ``{value, envKey?}`` (a plain number is the port itself)."""

    type: Literal["auto", "fixed"] | None = None
    """``auto`` (any free port), ``fixed`` or absent when ``value`` is given."""
    value: int | None = None
    env_key: str | None = None
    """The environment variable that receives the port (default ``PORT``)."""


class HttpReadiness(Struct, frozen=True, kw_only=True, tag_field="type", tag="http"):
    """Ready when ``urlTemplate`` answers 2xx/3xx."""

    url_template: str
    timeout_sec: float | None = None
    interval_ms: int | None = None


class TcpReadiness(Struct, frozen=True, kw_only=True, tag_field="type", tag="tcp"):
    """Ready when the port accepts a connection."""

    timeout_sec: float | None = None
    interval_ms: int | None = None


class LogReadiness(Struct, frozen=True, kw_only=True, tag_field="type", tag="log"):
    """Ready when the output matches ``pattern`` (a regular expression)."""

    pattern: str
    timeout_sec: float | None = None


Readiness = HttpReadiness | TcpReadiness | LogReadiness


class StopPolicy(Struct, frozen=True, kw_only=True):
    """When a running service stops by itself (reference §2 ``stopPolicy.type``)."""

    type: Literal["manual", "idle_timeout", "on_run_finish"] = "manual"
    idle_seconds: int | None = None


class ResourceLimits(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a contained service or job may use (docs/design/isolation.md): memory in MiB,
    processes (4096 when unset), and CPU in cores (``0.5``: half of one). A hit limit ends it
    with a ``failed`` reason naming the limit."""

    memory_mb: Annotated[int, msgspec.Meta(ge=16, le=16_777_216)] | None = None
    processes: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = None
    cpus: Annotated[float, msgspec.Meta(gt=0, le=1024)] | None = None


class ServiceSpec(Struct, frozen=True, kw_only=True):
    """A runtime service entry. Its command id is ``id`` slugified, else ``service:<slug(name)>``,
    else ``service:<index+1>``; duplicates get ``-<sourceKey>-<index+1>`` (reference §6.1)."""

    name: str
    command: str
    id: str | None = None
    cwd: str | None = None
    env: dict[str, str] | None = None
    port: int | PortSpec | None = None
    readiness: Readiness | None = None
    lifecycle: ServiceLifecycle | None = None
    """Default ``shared``."""
    reuse_scope: Literal["project_workspace", "execution_workspace", "agent", "run"] | None = None
    stop_policy: StopPolicy | None = None
    limits: ResourceLimits | None = None
    disabled_reason: str | None = None
    """Shown on the command; a disabled command cannot be started or run."""
    desired_state: DesiredState | None = None
    """The service index's desired state until one is recorded for it (default: the
    workspace's, else ``running``); ``manual`` keeps it out of start/stop of all services and out
    of runs (reference §6.5)."""


class JobSpec(Struct, frozen=True, kw_only=True):
    """A one-shot job entry; its command id is ``job:<slug(name)>`` unless ``id`` is given."""

    name: str
    command: str
    id: str | None = None
    cwd: str | None = None
    env: dict[str, str] | None = None
    timeout_sec: float | None = None
    limits: ResourceLimits | None = None
    disabled_reason: str | None = None
    """Shown on the command; a disabled command cannot be started or run."""


class RuntimeCommandSpec(Struct, frozen=True, kw_only=True):
    """An entry of the ``{commands: [...]}`` form: a service or a job by ``kind``."""

    kind: CommandKind
    name: str
    command: str
    id: str | None = None
    cwd: str | None = None
    env: dict[str, str] | None = None
    port: int | PortSpec | None = None
    readiness: Readiness | None = None
    lifecycle: ServiceLifecycle | None = None
    reuse_scope: Literal["project_workspace", "execution_workspace", "agent", "run"] | None = None
    stop_policy: StopPolicy | None = None
    timeout_sec: float | None = None
    limits: ResourceLimits | None = None
    disabled_reason: str | None = None
    """Shown on the command; a disabled command cannot be started or run."""
    desired_state: DesiredState | None = None
    """A service's initial desired state, as :attr:`ServiceSpec.desired_state` (ignored for a
    job)."""


class RuntimeConfig(Struct, frozen=True, kw_only=True):
    """``{services, jobs}`` or ``{commands}``; a non-empty ``commands`` takes precedence."""

    services: list[ServiceSpec] = msgspec.field(default_factory=list)
    jobs: list[JobSpec] = msgspec.field(default_factory=list)
    commands: list[RuntimeCommandSpec] = msgspec.field(default_factory=list)


class ManagedCheckout(Struct, frozen=True, kw_only=True):
    """The managed clone of a repo-only project workspace (API.md)."""

    state: ManagedCheckoutState = "none"
    path: str | None = None
    error: str | None = None
    operation_id: str | None = None
    """The clone operation while ``cloning`` (or the last one)."""


class ExecutionWorkspaceConfig(Struct, frozen=True, kw_only=True):
    """An execution workspace's own overrides (reference §1.5 ``metadata.config``).

    ``workspaceRuntime`` overrides the project workspace's runtime config when set.
    """

    provision_command: str | None = None
    runtime_provision_command: str | None = None
    teardown_command: str | None = None
    cleanup_command: str | None = None
    workspace_runtime: RuntimeConfig | None = None


class ExecutionWorkspaceConfigPatch(Struct, frozen=True, kw_only=True):
    """A change to :class:`ExecutionWorkspaceConfig`, key by key: an absent key stays as it is,
    ``null`` clears it (reference §4.4)."""

    provision_command: str | msgspec.UnsetType | None = msgspec.UNSET
    runtime_provision_command: str | msgspec.UnsetType | None = msgspec.UNSET
    teardown_command: str | msgspec.UnsetType | None = msgspec.UNSET
    cleanup_command: str | msgspec.UnsetType | None = msgspec.UNSET
    workspace_runtime: RuntimeConfig | msgspec.UnsetType | None = msgspec.UNSET
