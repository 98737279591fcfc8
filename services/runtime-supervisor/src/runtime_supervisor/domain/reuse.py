"""Reuse keys and scopes of runtime services (reference §6.4).

Two starts of a ``shared`` service with the same key may use the same running process; an
``ephemeral`` service has no key and is never reused across runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from runtime_supervisor.domain.config.effective import ReuseScope

__all__ = ["reuse_key", "scope_of"]


def reuse_key(
    *,
    lifecycle: str,
    scope_type: str,
    scope_id: str | None,
    service_name: str,
    command: str,
    cwd: str,
    port: int | None,
    env: Mapping[str, str],
    expose: Any = None,
) -> str | None:
    """The sha256 (hex) of the stable JSON of a service's identity, or ``None`` if ephemeral.

    Args:
        lifecycle: ``shared`` or ``ephemeral``.
        scope_type: The reuse scope (see :func:`scope_of`).
        scope_id: The scope's id.
        service_name: The service's name.
        command: The shell command.
        cwd: The resolved working directory.
        port: The explicit (identity) port, ``None`` for an automatic one.
        env: The rendered ``env`` of the config (not the whole process environment).
        expose: The exposure intent, if any (JSON-able).

    Returns:
        The key, equal for equal identities whatever the order of ``env``.
    """
    if lifecycle != "shared":
        return None
    identity = {
        "scopeType": scope_type,
        "scopeId": scope_id,
        "serviceName": service_name,
        "command": command,
        "cwd": cwd,
        "port": port,
        "env": dict(env),
        "expose": expose,
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def scope_of(
    reuse_scope: ReuseScope | None,
    lifecycle: str,
    *,
    project_workspace_id: str | None,
    workspace_id: str | None,
    agent_id: str | None,
    run_id: str | None,
    cwd: str | None,
    project_id: str | None = None,
) -> tuple[ReuseScope, str | None]:
    """The reuse scope of a service and the id of that scope for this start.

    Args:
        reuse_scope: The configured ``reuseScope``; default ``project_workspace`` for a shared
            service, ``run`` otherwise.
        lifecycle: ``shared`` or ``ephemeral``.
        project_workspace_id: The project workspace of the target.
        workspace_id: The execution workspace of the target (``None`` for a project workspace).
        agent_id: The agent acting, if any.
        run_id: The run acting, if any.
        cwd: The workspace's directory.
        project_id: The project (fallback of a ``project_workspace`` scope).

    Returns:
        ``(scopeType, scopeId)``: project_workspace → the project workspace id (or the project
        id); execution_workspace → the execution workspace id (or the cwd); agent → the agent
        id; run → the run id. The id is ``None`` when the start has none (a manual start of a
        run-scoped service).
    """
    scope: ReuseScope = reuse_scope or ("project_workspace" if lifecycle == "shared" else "run")
    if scope == "project_workspace":
        return scope, project_workspace_id or project_id
    if scope == "execution_workspace":
        return scope, workspace_id or cwd
    if scope == "agent":
        return scope, agent_id
    return scope, run_id
