"""The controller's use cases, by concern; :class:`heartbeat_controller.application.
HeartbeatControllerApplication` composes them."""

from __future__ import annotations

from heartbeat_controller.usecases.agents import AgentUseCases
from heartbeat_controller.usecases.base import UseCaseBase, cause_of
from heartbeat_controller.usecases.runs import LeaseOutcome, RunUseCases
from heartbeat_controller.usecases.wakes import WakeUseCases

__all__ = [
    "AgentUseCases",
    "LeaseOutcome",
    "RunUseCases",
    "UseCaseBase",
    "WakeUseCases",
    "cause_of",
]
