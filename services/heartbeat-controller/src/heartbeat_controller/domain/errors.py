"""Errors of the heartbeat-controller. Each carries the ``code`` and ``status`` of its error reply
(ARCHITECTURE §2) and ``details`` naming what was wrong; the bus maps them in one place."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ForbiddenError",
    "HeartbeatControllerError",
    "InvalidInputError",
    "NotFoundError",
    "RunFinishedError",
    "StateConflictError",
    "ValidationError",
]


class HeartbeatControllerError(Exception):
    """Base of every error the heartbeat-controller raises on purpose."""

    code = "state_conflict"
    status = 409

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details


class NotFoundError(HeartbeatControllerError):
    """No such thing, or one of another company (existence is not revealed)."""

    code = "not_found"
    status = 404


class ForbiddenError(HeartbeatControllerError):
    """The thing exists in the principal's company, but the actor may not touch it."""

    code = "forbidden"
    status = 403


class ValidationError(HeartbeatControllerError):
    """A field of the request is malformed; ``details.field`` names it (``adapterConfig.url``)."""

    code = "validation_failed"
    status = 400


class InvalidInputError(HeartbeatControllerError):
    """Well-formed but not allowed here (creating an agent without a company, ...)."""

    code = "unprocessable"
    status = 422


class StateConflictError(HeartbeatControllerError):
    """The request conflicts with the current state."""


class RunFinishedError(StateConflictError):
    """The run has already finished (cancel of a finished run)."""

    code = "run_finished"
