"""The effective runtime commands of a workspace, with ids and service indexes (reference §6.1).

The execution workspace's own ``workspaceRuntime`` wins whenever it is set, even empty (an explicit
empty config means "no services"); otherwise the project workspace's runtime config applies
(``inherited``). Inside a config, a non-empty ``commands`` list wins over ``services``/``jobs``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from contracts.workspace_config import (
    CommandKind,
    DesiredState,
    JobSpec,
    PortSpec,
    Readiness,
    ResourceLimits,
    RuntimeCommandSpec,
    RuntimeConfig,
    ServiceLifecycle,
    ServiceSpec,
    StopPolicy,
)

__all__ = [
    "ConfigSource",
    "EffectiveConfig",
    "ReuseScope",
    "SourceKey",
    "WorkspaceCommand",
    "command_by_id",
    "command_slug",
    "commands_named",
    "effective_commands",
    "service_by_index",
]

ReuseScope = Literal["project_workspace", "execution_workspace", "agent", "run"]
SourceKey = Literal["commands", "services", "jobs"]
ConfigSource = Literal["execution_workspace", "project_workspace"]

_Spec: TypeAlias = ServiceSpec | JobSpec | RuntimeCommandSpec


@dataclass(frozen=True, kw_only=True)
class WorkspaceCommand:
    """One configured service or job, normalized (defaults applied, id and index given).

    ``lifecycle``, ``reuse_scope`` and ``stop_policy`` matter for services only; a job carries the
    service defaults. ``cwd`` and the ``env`` values are still templates.
    """

    id: str
    name: str
    kind: CommandKind
    command: str
    cwd: str = "."
    env: dict[str, str] = field(default_factory=dict)
    port: int | PortSpec | None = None
    readiness: Readiness | None = None
    lifecycle: ServiceLifecycle = "shared"
    reuse_scope: ReuseScope = "project_workspace"
    stop_policy: StopPolicy = field(default_factory=StopPolicy)
    timeout_sec: float | None = None
    limits: ResourceLimits | None = None
    """What its contained processes may use (None: the defaults)."""
    service_index: int | None = None
    """The position among services, in config order (``None`` for jobs)."""
    disabled_reason: str | None = None
    desired_state: DesiredState | None = None
    """The service index's initial desired state (``desiredState``; services only): what it is
    until the supervisor records one for it."""
    expose: Any = None
    source_key: SourceKey = "services"
    source_index: int = 0


@dataclass(frozen=True, kw_only=True)
class EffectiveConfig:
    """The commands that apply to a workspace and where they come from.

    ``source`` is ``None`` when neither the workspace nor its project workspace has a runtime
    config (then ``commands`` is empty).
    """

    commands: tuple[WorkspaceCommand, ...] = ()
    inherited: bool = False
    source: ConfigSource | None = None

    @property
    def services(self) -> tuple[WorkspaceCommand, ...]:
        """The services, in service-index order."""
        return tuple(c for c in self.commands if c.kind == "service")

    @property
    def jobs(self) -> tuple[WorkspaceCommand, ...]:
        """The jobs, in config order."""
        return tuple(c for c in self.commands if c.kind == "job")

    @property
    def configured(self) -> bool:
        """True when a runtime config applies (possibly an empty one)."""
        return self.source is not None


def command_slug(text: str) -> str:
    """Slugify an id or a name: lower case, runs outside ``[a-z0-9_:-]`` become ``-``.

    The same rule as the workspace-realizer's validation, so both agree on ids.
    """
    slug = re.sub(r"[^a-z0-9_:-]+", "-", text.strip().lower())
    return re.sub(r"-{2,}", "-", slug).strip("-_")


def effective_commands(
    own: RuntimeConfig | None, inherited: RuntimeConfig | None
) -> EffectiveConfig:
    """The effective runtime commands: ``own`` when set (even empty), else ``inherited``.

    Args:
        own: The execution workspace's ``config.workspaceRuntime`` (for a project workspace
            target: the project workspace's runtime config).
        inherited: The linked project workspace's runtime config (``None`` for a project
            workspace target).

    Returns:
        The normalized commands with ids (reference §6.1) and service indexes.
    """
    if own is not None:
        return EffectiveConfig(commands=_normalize(own), source="execution_workspace")
    if inherited is not None:
        return EffectiveConfig(
            commands=_normalize(inherited), inherited=True, source="project_workspace"
        )
    return EffectiveConfig()


def command_by_id(effective: EffectiveConfig, command_id: str) -> WorkspaceCommand | None:
    """The command with id ``command_id`` (exact, or after slugifying), else the one command
    whose name is ``command_id`` (the reference's clients name a service ``web``, whose id is
    ``service:web``); ``None`` when none matches, or several have that name."""
    for wanted in (command_id, command_slug(command_id)):
        for command in effective.commands:
            if command.id == wanted:
                return command
    named = commands_named(effective, command_id)
    return named[0] if len(named) == 1 else None


def commands_named(effective: EffectiveConfig, name: str) -> tuple[WorkspaceCommand, ...]:
    """The commands whose name is ``name``."""
    return tuple(command for command in effective.commands if command.name == name)


def service_by_index(effective: EffectiveConfig, index: int) -> WorkspaceCommand | None:
    """The service with service index ``index``, or ``None`` when out of range."""
    return next((s for s in effective.services if s.service_index == index), None)


def _normalize(config: RuntimeConfig) -> tuple[WorkspaceCommand, ...]:
    entries: list[tuple[SourceKey, int, CommandKind, _Spec]] = []
    if config.commands:
        entries = [("commands", i, c.kind, c) for i, c in enumerate(config.commands)]
    else:
        entries = [("services", i, "service", s) for i, s in enumerate(config.services)]
        entries += [("jobs", i, "job", j) for i, j in enumerate(config.jobs)]
    seen: set[str] = set()
    commands: list[WorkspaceCommand] = []
    service_index = 0
    for key, index, kind, spec in entries:
        command_id = _unique_id(spec, kind, key, index, seen)
        commands.append(
            _command(
                spec, kind, command_id, key, index, service_index if kind == "service" else None
            )
        )
        service_index += kind == "service"
    return tuple(commands)


def _unique_id(spec: _Spec, kind: str, key: str, index: int, seen: set[str]) -> str:
    explicit = command_slug(spec.id) if spec.id else ""
    name = command_slug(spec.name or "")
    base = explicit or (f"{kind}:{name}" if name else f"{kind}:{index + 1}")
    found = base if base not in seen else f"{base}-{key}-{index + 1}"
    seen.add(found)
    return found


def _command(
    spec: _Spec,
    kind: CommandKind,
    command_id: str,
    key: SourceKey,
    index: int,
    service_index: int | None,
) -> WorkspaceCommand:
    service = None if isinstance(spec, JobSpec) else spec
    lifecycle: ServiceLifecycle = (service.lifecycle if service else None) or "shared"
    default_scope: ReuseScope = "project_workspace" if lifecycle == "shared" else "run"
    default_stop = StopPolicy(type="manual" if lifecycle == "shared" else "on_run_finish")
    default_name = f"{'Service' if kind == 'service' else 'Job'} {index + 1}"
    return WorkspaceCommand(
        id=command_id,
        name=(spec.name or "").strip() or default_name,
        kind=kind,
        command=spec.command,
        cwd=spec.cwd or ".",
        env=dict(spec.env or {}),
        port=service.port if service else None,
        readiness=service.readiness if service else None,
        lifecycle=lifecycle,
        reuse_scope=(service.reuse_scope if service else None) or default_scope,
        stop_policy=(service.stop_policy if service else None) or default_stop,
        timeout_sec=None if isinstance(spec, ServiceSpec) else spec.timeout_sec,
        limits=spec.limits,
        service_index=service_index,
        # Not (yet) fields of the contracts' specs; read when a later contract adds them.
        disabled_reason=getattr(spec, "disabled_reason", None),
        desired_state=service.desired_state if service and kind == "service" else None,
        expose=getattr(spec, "expose", None),
        source_key=key,
        source_index=index,
    )
