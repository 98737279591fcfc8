"""The adapter's environment (API.md "Agents, wakes, runs") and the ``http`` adapter's context.

``CLIPYARD_API_URL``, ``CLIPYARD_API_KEY`` (the run token), ``CLIPYARD_RUN_ID``,
``CLIPYARD_AGENT_ID``, ``CLIPYARD_COMPANY_ID``, ``CLIPYARD_TASK_ID`` (the issue, when any),
``CLIPYARD_WAKE_REASON``, ``CLIPYARD_WORKSPACE_ID``, ``CLIPYARD_WAKE_PAYLOAD_JSON`` (when a
payload), each also as ``PAPERCLIP_*``; the agent's own ``adapterConfig.env`` first, so the run's
variables win. The results hold the token: they go into ``LaunchAdapter`` and nowhere else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from heartbeat_controller.domain.records import JsonObject

__all__ = ["AdapterContext", "RunIdentity", "adapter_context", "adapter_env"]


@dataclass(frozen=True, kw_only=True)
class RunIdentity:
    """What the adapter is told about its run (never the token)."""

    api_url: str
    run_id: str
    agent_id: str
    company_id: str
    issue_id: str | None
    workspace_id: str | None
    wake_reason: str | None
    payload: Mapping[str, Any] | None


def _run_vars(identity: RunIdentity, token: str) -> dict[str, str]:
    values: dict[str, str | None] = {
        "API_URL": identity.api_url,
        "API_KEY": token,
        "RUN_ID": identity.run_id,
        "AGENT_ID": identity.agent_id,
        "COMPANY_ID": identity.company_id,
        "TASK_ID": identity.issue_id,
        "WAKE_REASON": identity.wake_reason or "",
        "WORKSPACE_ID": identity.workspace_id,
        "WAKE_PAYLOAD_JSON": (
            json.dumps(identity.payload, separators=(",", ":"), sort_keys=True)
            if identity.payload is not None
            else None
        ),
    }
    return {name: value for name, value in values.items() if value is not None}


def adapter_env(
    identity: RunIdentity, token: str, agent_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables added to the adapter's sanitized environment.

    Args:
        identity: The run.
        token: The clear run token.
        agent_env: The agent's ``adapterConfig.env`` (the run's variables override it).

    Returns:
        ``CLIPYARD_*`` and ``PAPERCLIP_*`` variables on top of ``agent_env``.
    """
    env = dict(agent_env or {})
    for name, value in _run_vars(identity, token).items():
        env[f"CLIPYARD_{name}"] = value
        env[f"PAPERCLIP_{name}"] = value
    return env


class AdapterContext(TypedDict):
    """The JSON an ``http`` adapter receives (``LaunchAdapter.context``). A plain dict at
    runtime, with no repr of its own: it holds the run token and is never logged."""

    apiUrl: str
    apiKey: str
    runId: str
    agentId: str
    companyId: str
    taskId: str | None
    wakeReason: str | None
    workspaceId: str | None
    wakePayload: JsonObject | None


def adapter_context(identity: RunIdentity, token: str) -> AdapterContext:
    """The JSON an ``http`` adapter receives: the same facts as the environment.

    Args:
        identity: The run.
        token: The clear run token.

    Returns:
        ``{apiUrl, apiKey, runId, agentId, companyId, taskId, wakeReason, workspaceId,
        wakePayload}``.
    """
    return {
        "apiUrl": identity.api_url,
        "apiKey": token,
        "runId": identity.run_id,
        "agentId": identity.agent_id,
        "companyId": identity.company_id,
        "taskId": identity.issue_id,
        "wakeReason": identity.wake_reason,
        "workspaceId": identity.workspace_id,
        "wakePayload": dict(identity.payload) if identity.payload is not None else None,
    }
