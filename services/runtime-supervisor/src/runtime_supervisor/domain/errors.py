"""Errors of the runtime-supervisor. Each carries the ``code`` of its error reply
(ARCHITECTURE §2), the status the error catalogue gives that code (``contracts.errors``) and
``details`` naming what was wrong; the bus maps them in one place."""

from __future__ import annotations

from contracts.errors import DetailedError, ErrorCode

__all__ = [
    "ContainmentError",
    "CopiesBehindError",
    "InvalidInputError",
    "LeaseConflictError",
    "NotFoundError",
    "PortConflictError",
    "PortsExhaustedError",
    "ProvisioningFailedError",
    "RuntimeSupervisorError",
    "StartFailedError",
    "StateConflictError",
]


class RuntimeSupervisorError(DetailedError):
    """Base of every error the runtime-supervisor raises on purpose."""

    code = ErrorCode.STATE_CONFLICT


class NotFoundError(RuntimeSupervisorError):
    """No such thing, or one of another company (existence is not revealed)."""

    code = ErrorCode.NOT_FOUND


class CopiesBehindError(RuntimeSupervisorError):
    """The realizer has said something this service's copies have not heard yet (its events are
    still on their way): retry in a moment."""

    code = ErrorCode.SERVICE_UNAVAILABLE


class ContainmentError(RuntimeSupervisorError):
    """A company's command cannot be contained on this node (the host lacks what it needs, no
    identity is left, a resource group was refused): it does not run unconfined instead."""

    code = ErrorCode.SANDBOX_UNAVAILABLE


class InvalidInputError(RuntimeSupervisorError):
    """Well-formed but not allowed (a job started, a service run, no local path, ...)."""

    code = ErrorCode.UNPROCESSABLE


class StateConflictError(RuntimeSupervisorError):
    """The request conflicts with the current state (the workspace is closing, ...)."""


class PortConflictError(RuntimeSupervisorError):
    """The port is reserved by another live service (``details`` name its owner), or held by a
    foreign process."""

    code = ErrorCode.PORT_CONFLICT


class PortsExhaustedError(RuntimeSupervisorError):
    """No free port in the configured range after every attempt (reference case 55)."""

    code = ErrorCode.WORKSPACE_RUNTIME_PORT_ALLOCATION_EXHAUSTED


class LeaseConflictError(RuntimeSupervisorError):
    """Another owner holds the target's runtime-control lease (reference §6.8, case 63)."""

    code = ErrorCode.WORKSPACE_RUNTIME_LEASE_CONFLICT


class StartFailedError(RuntimeSupervisorError):
    """A runtime service did not start: spawn error, exit before readiness, readiness timeout
    (reference §6.2 step 8, case 57); ``details`` name the instance, its exit status and last
    output."""

    code = ErrorCode.RUNTIME_SERVICE_START_FAILED


class ProvisioningFailedError(RuntimeSupervisorError):
    """The lazy runtime provision command failed, so no service started (DECISIONS 1);
    ``details`` name the workspace operation that failed."""

    code = ErrorCode.RUNTIME_PROVISIONING_FAILED
