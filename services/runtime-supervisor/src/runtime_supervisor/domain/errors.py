"""Errors of the runtime-supervisor. Each carries the ``code`` and ``status`` of its error reply
(ARCHITECTURE §2) and ``details`` naming what was wrong; the bus maps them in one place."""

from __future__ import annotations

from typing import Any

__all__ = [
    "CopiesBehindError",
    "ForbiddenError",
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


class RuntimeSupervisorError(Exception):
    """Base of every error the runtime-supervisor raises on purpose."""

    code = "state_conflict"
    status = 409

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details


class NotFoundError(RuntimeSupervisorError):
    """No such thing, or one of another company (existence is not revealed)."""

    code = "not_found"
    status = 404


class CopiesBehindError(RuntimeSupervisorError):
    """The realizer has said something this service's copies have not heard yet (its events are
    still on their way): retry in a moment."""

    code = "service_unavailable"
    status = 503


class ForbiddenError(RuntimeSupervisorError):
    """The thing exists in the principal's company, but the actor may not touch it."""

    code = "forbidden"
    status = 403


class InvalidInputError(RuntimeSupervisorError):
    """Well-formed but not allowed (a job started, a service run, no local path, ...)."""

    code = "unprocessable"
    status = 422


class StateConflictError(RuntimeSupervisorError):
    """The request conflicts with the current state (the workspace is closing, ...)."""


class PortConflictError(RuntimeSupervisorError):
    """The port is reserved by another live service (``details`` name its owner), or held by a
    foreign process."""

    code = "port_conflict"


class PortsExhaustedError(RuntimeSupervisorError):
    """No free port in the configured range after every attempt (reference case 55)."""

    code = "workspace_runtime_port_allocation_exhausted"


class LeaseConflictError(RuntimeSupervisorError):
    """Another owner holds the target's runtime-control lease (reference §6.8, case 63)."""

    code = "workspace_runtime_lease_conflict"


class StartFailedError(RuntimeSupervisorError):
    """A runtime service did not start: spawn error, exit before readiness, readiness timeout
    (reference §6.2 step 8, case 57); ``details`` name the instance, its exit status and last
    output."""

    code = "runtime_service_start_failed"


class ProvisioningFailedError(RuntimeSupervisorError):
    """The lazy runtime provision command failed, so no service started (DECISIONS 1);
    ``details`` name the workspace operation that failed."""

    code = "runtime_provisioning_failed"
