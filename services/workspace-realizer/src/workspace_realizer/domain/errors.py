"""Errors of the workspace-realizer. Each carries the ``code`` and ``status`` of its error reply
(ARCHITECTURE §2) and ``details`` naming what was wrong; the bus maps them in one place."""

from __future__ import annotations

from typing import Any

__all__ = [
    "BranchReconcileRefusedError",
    "CheckoutFailedError",
    "CloseBlockedError",
    "DependentsError",
    "FenceError",
    "ForbiddenError",
    "HostStepError",
    "IdentifierTakenError",
    "InvalidInputError",
    "LowTrustViolationError",
    "NotFoundError",
    "NotReopenableError",
    "PathRequiredError",
    "ReopenPendingError",
    "RequiresProjectError",
    "StateConflictError",
    "WorkspaceRealizerError",
    "WorkspaceValidationError",
]


class WorkspaceRealizerError(Exception):
    """Base of every error the workspace-realizer raises on purpose."""

    code = "state_conflict"
    status = 409

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details


class NotFoundError(WorkspaceRealizerError):
    """No such thing, or one of another company (existence is not revealed)."""

    code = "not_found"
    status = 404


class ForbiddenError(WorkspaceRealizerError):
    """The thing exists in the principal's company, but the actor may not touch it."""

    code = "forbidden"
    status = 403


class InvalidInputError(WorkspaceRealizerError):
    """Well-formed but not allowed (a workspace without a path, a bad runtime config)."""

    code = "unprocessable"
    status = 422


class StateConflictError(WorkspaceRealizerError):
    """The request conflicts with the current state (open workspaces depend on it, ...)."""


class CloseBlockedError(WorkspaceRealizerError):
    """Close readiness is ``blocked``; ``details`` carries the reasons and the readiness."""

    code = "close_blocked"


class FenceError(StateConflictError):
    """A late step of a lifecycle saga met a newer lifecycle generation (a reopen or archive)."""

    code = "lifecycle_conflict"


class DependentsError(StateConflictError):
    """Something open still depends on what is to be deleted."""

    code = "has_open_dependents"


class IdentifierTakenError(StateConflictError):
    """An explicitly given issue identifier is used by another issue of the company."""

    code = "identifier_taken"


class ReopenPendingError(StateConflictError):
    """The workspace was reopened minutes ago; archive waits until the reopen is consumed."""

    code = "reopen_pending"


class NotReopenableError(StateConflictError):
    """The workspace is open, being archived, or could not be rebuilt."""

    code = "not_reopenable"


class PathRequiredError(WorkspaceRealizerError):
    """A project workspace needs ``cwd`` or ``repoUrl``."""

    code = "workspace_path_required"
    status = 422


class RequiresProjectError(WorkspaceRealizerError):
    """An isolated workspace needs a project workspace to branch from."""

    code = "workspace_worktree_requires_project"
    status = 422


class LowTrustViolationError(WorkspaceRealizerError):
    """An untrusted agent's run would not get an isolated worktree (DECISIONS 11)."""

    code = "low_trust_violation"
    status = 422


class WorkspaceValidationError(WorkspaceRealizerError):
    """A workspace on disk is not what the record says (and cannot be repaired safely)."""

    code = "workspace_validation_failed"
    status = 422


class HostStepError(WorkspaceRealizerError):
    """A shell step the work depends on failed on the host (the provision command)."""

    code = "workspace_provision_failed"
    status = 422


class CheckoutFailedError(WorkspaceRealizerError):
    """The managed clone of a repo-only project workspace failed (nothing was left behind)."""

    code = "managed_checkout_failed"
    status = 422


class BranchReconcileRefusedError(WorkspaceRealizerError):
    """A branch reconcile's conditions do not hold (reference §4.3); ``details`` has the evidence."""

    code = "branch_reconcile_refused"
    status = 422
