"""Which queued runs may start now (pure: no store, no clock).

Queued runs are looked at in queue order. One starts when its agent is under
``maxConcurrentRuns`` and, if its issue has a current execution workspace (the controller's copy
of the realizer's ``issue.workspace_linked``), that workspace's run lease is free and no earlier
run wants it: neither a running run waiting in the workspace's FIFO nor an earlier queued run,
even one held back by its own agent's limit. So two wakes on one workspace never run together,
and they run in the order they were queued.

Also the values :meth:`HeartbeatControllerApplication.claim_runnable` answers with.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contracts.agents import HttpAdapterConfig, ProcessAdapterConfig

if TYPE_CHECKING:
    from heartbeat_controller.domain.records import JsonObject

__all__ = ["AgentSnapshot", "Candidate", "Claim", "runnable"]


@dataclass(frozen=True)
class Candidate:
    """A queued run as the scheduler sees it."""

    run_id: str
    agent_id: str
    workspace_id: str | None
    """The current execution workspace of its issue, if it has one."""


def runnable(
    queued: Sequence[Candidate],
    running_per_agent: Mapping[str, int],
    max_per_agent: Mapping[str, int],
    busy_workspaces: Collection[str],
) -> list[Candidate]:
    """The queued runs that may start now, in queue order.

    Args:
        queued: The queued runs, oldest first.
        running_per_agent: How many runs each agent has running.
        max_per_agent: Each live agent's ``maxConcurrentRuns`` (an agent missing here runs
            nothing).
        busy_workspaces: Workspaces whose run lease is held, or that running runs wait for.

    Returns:
        The runs to start, each under its agent's limit and on a free workspace.
    """
    counts = dict(running_per_agent)
    wanted = set(busy_workspaces)
    chosen: list[Candidate] = []
    for run in queued:
        limit = max_per_agent.get(run.agent_id)
        agent_free = limit is not None and counts.get(run.agent_id, 0) < limit
        workspace_free = run.workspace_id is None or run.workspace_id not in wanted
        if agent_free and workspace_free:
            chosen.append(run)
            counts[run.agent_id] = counts.get(run.agent_id, 0) + 1
        if run.workspace_id is not None:
            wanted.add(run.workspace_id)
    return chosen


@dataclass(frozen=True)
class AgentSnapshot:
    """What a started run needs of its agent, as it was when the run started."""

    agent_id: str
    name: str
    adapter_type: str
    adapter_config: ProcessAdapterConfig | HttpAdapterConfig
    trusted: bool


@dataclass(frozen=True)
class Claim:
    """A run that just started (``RunStarted``, its workspace leased when it has one, stage
    ``workspace_resolution``): the run task takes it from here."""

    run_id: str
    company_id: str
    agent: AgentSnapshot
    issue_id: str | None
    workspace_id: str | None
    """The workspace whose run lease the run holds already (its issue's current one)."""
    source: str
    wake_reason: str | None
    payload: JsonObject | None
