"""What one start of a configured service is (reference §6.2 step 2, §6.4): its resolved cwd, its
rendered environment, its port request, its scope and reuse key, and the URLs it will have.

Pure: the target, the command and who asks in; an :class:`Identity` out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from contracts.workspace_config import HttpReadiness, PortSpec
from runtime_supervisor.domain import InvalidInputError, IssueBrief, RuntimeTarget
from runtime_supervisor.domain.config.effective import WorkspaceCommand
from runtime_supervisor.domain.config.templates import render, resolve_cwd
from runtime_supervisor.domain.environment import SERVICE_HOST
from runtime_supervisor.domain.reuse import reuse_key, scope_of

__all__ = ["NO_PATH", "Identity", "PortMode", "require_cwd", "resolve", "template_values"]

PortMode = Literal["auto", "fixed"]
NO_PATH = "Execution workspace needs a local path before Clipyard can run workspace commands"


def require_cwd(target: RuntimeTarget) -> str:
    """The target's directory, or 422 (reference §4.2 step 3)."""
    if not target.cwd:
        raise InvalidInputError(NO_PATH, workspaceId=target.id)
    return target.cwd


def template_values(
    target: RuntimeTarget, issue: IssueBrief | None, agent_id: str | None
) -> dict[str, str]:
    """The ``{{...}}`` values of a start (``port`` is added once it is known)."""
    return {
        "workspace.cwd": target.cwd or "",
        "workspace.branchName": target.branch_name or "",
        "workspace.worktreePath": target.cwd or "",
        "workspace.repoUrl": target.repo_url or "",
        "workspace.repoRef": target.base_ref or "",
        "issue.id": issue.id if issue else "",
        "issue.identifier": (issue.identifier or "") if issue else "",
        "issue.title": (issue.title or "") if issue else "",
        "agent.id": agent_id or "",
        "agent.name": "",
    }


@dataclass(frozen=True, kw_only=True)
class Identity:
    """One start of a service, resolved (see the module's docstring)."""

    command: WorkspaceCommand
    cwd: Path
    values: dict[str, str]
    port_mode: PortMode | None
    fixed_port: int | None
    env_key: str | None
    scope_type: str
    scope_id: str | None
    reuse_key: str | None
    owner: str
    """Who reserves its port, as the state names owners (``execution workspace <id> (service
    web)``)."""

    @property
    def name(self) -> str:
        """The configured service's name."""
        return self.command.name

    def with_port(self, port: int | None) -> dict[str, str]:
        """The template values once the port is known."""
        return self.values if port is None else {**self.values, "port": str(port)}

    def env(self, port: int | None) -> dict[str, str]:
        """The service's own ``env``, rendered (the sanitized base and PORT/HOST come on top)."""
        values = self.with_port(port)
        return {key: render(value, values) for key, value in self.command.env.items()}

    def url(self, port: int | None) -> str | None:
        """Its URL: an ``expose.urlTemplate``, else ``http://127.0.0.1:<port>`` (loopback)."""
        expose: Any = self.command.expose
        template = expose.get("urlTemplate") if isinstance(expose, dict) else None
        if isinstance(template, str) and template:
            return render(template, self.with_port(port))
        return f"http://{SERVICE_HOST}:{port}" if port is not None else None

    def readiness_url(self, port: int | None) -> str | None:
        """The rendered URL of an ``http`` readiness, if it has one."""
        readiness = self.command.readiness
        if isinstance(readiness, HttpReadiness):
            return render(readiness.url_template, self.with_port(port))
        return None


def _port_request(port: int | PortSpec | None) -> tuple[PortMode | None, int | None, str | None]:
    if port is None:
        return None, None, None
    if isinstance(port, int):
        return "fixed", port, None
    if port.value is not None:
        return "fixed", port.value, port.env_key
    if port.type == "fixed":
        raise InvalidInputError("A fixed port needs its value: {type: fixed, value: N}.")
    return "auto", None, port.env_key


def resolve(
    target: RuntimeTarget,
    command: WorkspaceCommand,
    *,
    run_id: str | None = None,
    agent_id: str | None = None,
    issue: IssueBrief | None = None,
) -> Identity:
    """Resolve one start of ``command`` in ``target``.

    Args:
        target: Where it runs.
        command: The configured service.
        run_id: The run that asks (scope ``run``).
        agent_id: The agent that asks (scope ``agent``, ``{{agent.id}}``).
        issue: The issue of the templates (default: the target's source issue).

    Raises:
        InvalidInputError: The target has no directory, or the port request is malformed.
        TemplateError: A template names an unknown placeholder, or the cwd leaves the workspace.
    """
    root = require_cwd(target)
    values = template_values(target, issue or target.source_issue, agent_id)
    cwd = resolve_cwd(root, command.cwd, values)
    port_mode, fixed_port, env_key = _port_request(command.port)
    scope_type, scope_id = scope_of(
        command.reuse_scope,
        command.lifecycle,
        project_workspace_id=target.project_workspace_id,
        workspace_id=target.execution_workspace_id,
        agent_id=agent_id,
        run_id=run_id,
        cwd=target.cwd,
        project_id=target.project_id,
    )
    identity_values = {**values, "port": str(fixed_port) if fixed_port is not None else ""}
    key = reuse_key(
        lifecycle=command.lifecycle,
        scope_type=scope_type,
        scope_id=scope_id,
        service_name=command.name,
        command=command.command,
        cwd=str(cwd),
        port=fixed_port,
        env={k: render(v, identity_values) for k, v in command.env.items()},
        expose=command.expose,
    )
    return Identity(
        command=command,
        cwd=cwd,
        values=values,
        port_mode=port_mode,
        fixed_port=fixed_port,
        env_key=env_key,
        scope_type=scope_type,
        scope_id=scope_id,
        reuse_key=key,
        owner=f"{target.label} (service {command.name})",
    )
