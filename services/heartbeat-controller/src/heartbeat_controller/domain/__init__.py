"""Domain of the heartbeat-controller: aggregates with past-tense events, and errors. Pure: no
I/O. Who may see and do what is the one access model, ``servicekit.access`` (ARCHITECTURE §5.1)."""

from __future__ import annotations

from heartbeat_controller.domain.agent import AGENT_FIELDS, Agent
from heartbeat_controller.domain.errors import (
    HeartbeatControllerError,
    InvalidInputError,
    NotFoundError,
    RunFinishedError,
    StateConflictError,
    ValidationError,
)
from heartbeat_controller.domain.issue_copy import COPIED_FIELDS, IssueCopy, issue_copy_id
from heartbeat_controller.domain.run import FINISHED_STATUSES, STAGES, Run
from heartbeat_controller.domain.wakeup import CLOSED_WAKEUP_STATUSES, WakeupRequest

__all__ = [
    "AGENT_FIELDS",
    "CLOSED_WAKEUP_STATUSES",
    "COPIED_FIELDS",
    "FINISHED_STATUSES",
    "STAGES",
    "Agent",
    "HeartbeatControllerError",
    "InvalidInputError",
    "IssueCopy",
    "NotFoundError",
    "Run",
    "RunFinishedError",
    "StateConflictError",
    "ValidationError",
    "WakeupRequest",
    "issue_copy_id",
]
