"""Errors of the heartbeat-controller. Each carries the ``code`` of its error reply
(ARCHITECTURE §2), the status the error catalogue gives that code (``contracts.errors``) and
``details`` naming what was wrong; the bus maps them in one place."""

from __future__ import annotations

from contracts.errors import DetailedError, ErrorCode

__all__ = [
    "HeartbeatControllerError",
    "InvalidInputError",
    "NotFoundError",
    "RunFinishedError",
    "StateConflictError",
    "ValidationError",
]


class HeartbeatControllerError(DetailedError):
    """Base of every error the heartbeat-controller raises on purpose."""

    code = ErrorCode.STATE_CONFLICT


class NotFoundError(HeartbeatControllerError):
    """No such thing, or one of another company (existence is not revealed)."""

    code = ErrorCode.NOT_FOUND


class ValidationError(HeartbeatControllerError):
    """A field of the request is malformed; ``details.field`` names it (``adapterConfig.url``)."""

    code = ErrorCode.VALIDATION_FAILED


class InvalidInputError(HeartbeatControllerError):
    """Well-formed but not allowed here (creating an agent without a company, ...)."""

    code = ErrorCode.UNPROCESSABLE


class StateConflictError(HeartbeatControllerError):
    """The request conflicts with the current state."""


class RunFinishedError(StateConflictError):
    """The run has already finished (cancel of a finished run)."""

    code = ErrorCode.RUN_FINISHED
