"""Error codes carried by ``error`` replies and HTTP error bodies, with their usual HTTP status."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["DEFAULT_STATUS", "ErrorCode"]


class ErrorCode(StrEnum):
    """Every error code Clipyard answers with. Later issues add codes here and in the catalogue."""

    INVALID_JSON = "invalid_json"
    VALIDATION_FAILED = "validation_failed"
    UNPROCESSABLE = "unprocessable"
    UNAUTHENTICATED = "unauthenticated"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    STATE_CONFLICT = "state_conflict"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    MESSAGE_TOO_LARGE = "message_too_large"
    SERVICE_UNAVAILABLE = "service_unavailable"
    TIMEOUT = "timeout"
    INTERNAL = "internal"
    CLOSE_BLOCKED = "close_blocked"
    WORKSPACE_RUNTIME_LEASE_CONFLICT = "workspace_runtime_lease_conflict"
    WORKSPACE_RUNTIME_PORT_ALLOCATION_EXHAUSTED = "workspace_runtime_port_allocation_exhausted"
    PORT_CONFLICT = "port_conflict"
    LOW_TRUST_VIOLATION = "low_trust_violation"
    WORKSPACE_VALIDATION_FAILED = "workspace_validation_failed"
    WORKSPACE_PATH_REQUIRED = "workspace_path_required"
    HAS_OPEN_DEPENDENTS = "has_open_dependents"
    IDENTIFIER_TAKEN = "identifier_taken"
    NOT_REOPENABLE = "not_reopenable"
    REOPEN_PENDING = "reopen_pending"
    LIFECYCLE_CONFLICT = "lifecycle_conflict"
    BRANCH_RECONCILE_REFUSED = "branch_reconcile_refused"
    MANAGED_CHECKOUT_FAILED = "managed_checkout_failed"
    CONFIGURATION_INCOMPLETE = "configuration_incomplete"
    WORKSPACE_WORKTREE_REQUIRES_PROJECT = "workspace_worktree_requires_project"
    WORKSPACE_PROVISION_FAILED = "workspace_provision_failed"
    RUNTIME_SERVICE_START_FAILED = "runtime_service_start_failed"
    RUNTIME_PROVISIONING_FAILED = "runtime_provisioning_failed"
    SLOT_UNAVAILABLE = "slot_unavailable"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    RUN_FINISHED = "run_finished"


DEFAULT_STATUS: Final[dict[ErrorCode, int]] = {
    ErrorCode.INVALID_JSON: 400,
    ErrorCode.VALIDATION_FAILED: 400,
    ErrorCode.UNPROCESSABLE: 422,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.STATE_CONFLICT: 409,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.MESSAGE_TOO_LARGE: 413,
    ErrorCode.SERVICE_UNAVAILABLE: 503,
    ErrorCode.TIMEOUT: 504,
    ErrorCode.INTERNAL: 500,
    ErrorCode.CLOSE_BLOCKED: 409,
    ErrorCode.WORKSPACE_RUNTIME_LEASE_CONFLICT: 409,
    ErrorCode.WORKSPACE_RUNTIME_PORT_ALLOCATION_EXHAUSTED: 409,
    ErrorCode.PORT_CONFLICT: 409,
    ErrorCode.LOW_TRUST_VIOLATION: 422,
    ErrorCode.WORKSPACE_VALIDATION_FAILED: 422,
    ErrorCode.WORKSPACE_PATH_REQUIRED: 422,
    ErrorCode.HAS_OPEN_DEPENDENTS: 409,
    ErrorCode.IDENTIFIER_TAKEN: 409,
    ErrorCode.NOT_REOPENABLE: 409,
    ErrorCode.REOPEN_PENDING: 409,
    ErrorCode.LIFECYCLE_CONFLICT: 409,
    ErrorCode.BRANCH_RECONCILE_REFUSED: 422,
    ErrorCode.MANAGED_CHECKOUT_FAILED: 422,
    ErrorCode.CONFIGURATION_INCOMPLETE: 422,
    ErrorCode.WORKSPACE_WORKTREE_REQUIRES_PROJECT: 422,
    ErrorCode.WORKSPACE_PROVISION_FAILED: 422,
    ErrorCode.RUNTIME_SERVICE_START_FAILED: 409,
    ErrorCode.RUNTIME_PROVISIONING_FAILED: 409,
    ErrorCode.SLOT_UNAVAILABLE: 409,
    ErrorCode.SANDBOX_UNAVAILABLE: 422,
    ErrorCode.RUN_FINISHED: 409,
}
