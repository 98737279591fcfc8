"""The workspace detail page's view of a runtime config: the services and jobs it configures.

The runtime-supervisor decides what a workspace runs (its ``config.workspaceRuntime``, else its
project workspace's ``runtimeConfig``); the page only needs each command's name, kind, the
``serviceIndex`` a service is started by and the ``workspaceCommandId`` a job is run by. The ids
follow the supervisor's rule (reference §6.1: ``service:web``, ``job:hello``) so that the buttons
name the same commands the API knows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from contracts.execution_views import RuntimeServiceBrief
from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig
from contracts.workspace_views import ProjectWorkspace

__all__ = [
    "ConfigForm",
    "ConfiguredCommand",
    "InheritedRuntime",
    "ServiceRow",
    "command_slug",
    "config_form",
    "configured_commands",
    "inherited_runtime",
    "runtime_json",
    "service_rows",
]


@dataclass(frozen=True)
class ConfiguredCommand:
    """A service or job of the effective runtime config."""

    id: str
    name: str
    kind: Literal["service", "job"]
    command: str
    service_index: int | None


@dataclass(frozen=True)
class ServiceRow:
    """One row of the "Runtime services" table: a configured service and its runtime record."""

    name: str
    service_index: int | None
    command_id: str | None
    runtime: RuntimeServiceBrief | None

    @property
    def status(self) -> str:
        """The runtime status, ``stopped`` when the supervisor has no record of it."""
        return self.runtime.status if self.runtime else "stopped"


@dataclass(frozen=True)
class ConfigForm:
    """The values of the "Configuration" form."""

    provision_command: str
    runtime_provision_command: str
    teardown_command: str
    cleanup_command: str
    runtime_json: str


@dataclass(frozen=True)
class InheritedRuntime:
    """The project workspace's runtime config, which a workspace without one of its own runs
    (the "Configuration" section shows it read-only)."""

    project_workspace_id: str
    name: str
    """The project workspace's name."""
    runtime_json: str
    """Its ``runtimeConfig`` as indented JSON (empty: it has none either)."""


def command_slug(text: str) -> str:
    """Slugify an id or a name the way the runtime-supervisor does (lower case, runs outside
    ``[a-z0-9_:-]`` become ``-``)."""
    slug = re.sub(r"[^a-z0-9_:-]+", "-", text.strip().lower())
    return re.sub(r"-{2,}", "-", slug).strip("-_")


def configured_commands(config: RuntimeConfig | None) -> list[ConfiguredCommand]:
    """The services and jobs of a runtime config, in the supervisor's order and with its ids.

    Args:
        config: The effective runtime config (``None``: nothing configured).

    Returns:
        One entry per command; services carry their ``serviceIndex``.
    """
    if config is None:
        return []
    entries: list[tuple[str, int, Literal["service", "job"], str | None, str, str]] = []
    if config.commands:
        entries = [
            ("commands", i, c.kind, c.id, c.name, c.command) for i, c in enumerate(config.commands)
        ]
    else:
        entries = [
            ("services", i, "service", s.id, s.name, s.command)
            for i, s in enumerate(config.services)
        ]
        entries += [("jobs", i, "job", j.id, j.name, j.command) for i, j in enumerate(config.jobs)]
    seen: set[str] = set()
    found: list[ConfiguredCommand] = []
    service_index = 0
    for key, index, kind, explicit_id, raw_name, command in entries:
        explicit = command_slug(explicit_id) if explicit_id else ""
        slug = command_slug(raw_name or "")
        base = explicit or (f"{kind}:{slug}" if slug else f"{kind}:{index + 1}")
        command_id = base if base not in seen else f"{base}-{key}-{index + 1}"
        seen.add(command_id)
        default_name = f"{'Service' if kind == 'service' else 'Job'} {index + 1}"
        name = (raw_name or "").strip() or default_name
        found.append(
            ConfiguredCommand(
                id=command_id,
                name=name,
                kind=kind,
                command=command,
                service_index=service_index if kind == "service" else None,
            )
        )
        service_index += kind == "service"
    return found


def service_rows(
    commands: list[ConfiguredCommand], runtime: list[RuntimeServiceBrief]
) -> list[ServiceRow]:
    """One row per configured service, with its runtime record; then runtime records no
    configured service claims (a service the config no longer names, still running)."""
    claimed: set[str] = set()
    rows: list[ServiceRow] = []
    for command in commands:
        if command.kind != "service":
            continue
        match = next(
            (
                one
                for one in runtime
                if one.id not in claimed
                and (
                    one.workspace_command_id == command.id
                    or (
                        one.service_index == command.service_index
                        and one.service_name == command.name
                    )
                )
            ),
            None,
        ) or next(
            (one for one in runtime if one.id not in claimed and one.service_name == command.name),
            None,
        )
        if match is not None:
            claimed.add(match.id)
        rows.append(ServiceRow(command.name, command.service_index, command.id, match))
    for one in runtime:
        if one.id not in claimed:
            rows.append(ServiceRow(one.service_name, one.service_index, None, one))
    return rows


def config_form(config: ExecutionWorkspaceConfig | None) -> ConfigForm:
    """The form's values: the four commands and ``workspaceRuntime`` as indented JSON."""
    config = config or ExecutionWorkspaceConfig()
    return ConfigForm(
        provision_command=config.provision_command or "",
        runtime_provision_command=config.runtime_provision_command or "",
        teardown_command=config.teardown_command or "",
        cleanup_command=config.cleanup_command or "",
        runtime_json=runtime_json(config.workspace_runtime),
    )


def inherited_runtime(project_workspace: ProjectWorkspace) -> InheritedRuntime:
    """What a workspace without a runtime config of its own inherits from ``project_workspace``."""
    return InheritedRuntime(
        project_workspace_id=project_workspace.id,
        name=project_workspace.name,
        runtime_json=runtime_json(project_workspace.runtime_config),
    )


def runtime_json(config: RuntimeConfig | None) -> str:
    """A runtime config as the page shows it: indented JSON without the API's defaults (empty
    for none)."""
    if config is None:
        return ""
    return json.dumps(_pruned(msgspec.to_builtins(config)), indent=2)


def _pruned(value: Any) -> Any:
    """``value`` without ``null`` members and empty lists (the API's defaults), recursively."""
    if isinstance(value, dict):
        return {key: _pruned(one) for key, one in value.items() if one is not None and one != []}
    if isinstance(value, list):
        return [_pruned(one) for one in value]
    return value
