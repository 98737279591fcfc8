"""Examples of the runtime-supervisor's commands and queries and the controller's run events.

Loaded by ``examples.py``, which passes its envelope builder and principals in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contracts.base import Message, Principal
from contracts.run_events import RunFinished, RunStarted
from contracts.runtime_commands import (
    ControlRuntime,
    EnsureRunServices,
    GetRuntimeServiceLog,
    GetRuntimeState,
)

WS = "6e2b4d0f-9a8c-4f3e-8b2c-4d5e6f7a8b9c"
RUN = "9b5e7a3c-2d1f-4c6b-9e5f-7a8b9c0d1e2f"
AGENT = "ac5e7a3c-2d1f-4c6b-9e5f-7a8b9c0d1e2f"
ISSUE = "3e8c3f41-7d76-4f1b-8f41-4f5a6b7c8d9e"
SERVICE = "b1c2d3e4-5f60-4a7b-8c9d-0e1f2a3b4c5d"


def build(envelope: Callable[..., dict[str, Any]], principal: Principal) -> list[Message]:
    """Every runtime message, once each."""
    p = principal
    return [
        ControlRuntime(principal=p, workspace_id=WS, action="start", service_index=0),
        GetRuntimeState(principal=p, workspace_id=WS, probe_health=True),
        GetRuntimeServiceLog(principal=p, workspace_id=WS, service_id=SERVICE, tail=100),
        EnsureRunServices(principal=p, workspace_id=WS, run_id=RUN, agent_id=AGENT, issue_id=ISSUE),
        RunStarted(**envelope("run"), agent_id=AGENT, issue_id=ISSUE, workspace_id=WS),
        RunFinished(
            **envelope("run", 2),
            agent_id=AGENT,
            issue_id=ISSUE,
            workspace_id=WS,
            status="succeeded",
        ),
    ]
