"""NATS endpoints of the heartbeat-controller: agents and wakes (:mod:`.agents`), runs
(:mod:`.runs`). Each answers from the application on the store's thread; the orchestration
passes its hooks (nudge the dispatcher after a wake, kill a running adapter after a cancel)."""

from __future__ import annotations

from heartbeat_controller.endpoints.agents import AgentEndpoints
from heartbeat_controller.endpoints.runs import RunEndpoints

__all__ = ["AgentEndpoints", "RunEndpoints"]
