"""Errors of the workspace-realizer. Each carries the ``code`` of its error reply
(ARCHITECTURE §2), the status the error catalogue gives that code (``contracts.errors``) and
``details`` naming what was wrong; the bus maps them in one place. Refusals of the access model
(403 ``forbidden``, and 404 for another company's thing) are ``servicekit.access``'s
``AccessDeniedError`` and ``NotVisibleError``."""

from __future__ import annotations

from contracts.errors import DetailedError, ErrorCode

__all__ = [
    "BranchReconcileRefusedError",
    "CheckoutFailedError",
    "CloseBlockedError",
    "DependentsError",
    "FenceError",
    "HostStepError",
    "IdentifierTakenError",
    "InvalidInputError",
    "LowTrustViolationError",
    "NotFoundError",
    "NotReopenableError",
    "PathRequiredError",
    "ReopenPendingError",
    "RequestUnansweredError",
    "RequiresProjectError",
    "StateConflictError",
    "WorkspaceRealizerError",
    "WorkspaceValidationError",
]


class WorkspaceRealizerError(DetailedError):
    """Base of every error the workspace-realizer raises on purpose."""

    code = ErrorCode.STATE_CONFLICT


class NotFoundError(WorkspaceRealizerError):
    """No such thing, or one of another company (existence is not revealed)."""

    code = ErrorCode.NOT_FOUND


class RequestUnansweredError(WorkspaceRealizerError):
    """Another service that must confirm something (the heartbeat-controller, an agent) did not
    answer; nothing was changed, so the request may simply be retried."""

    code = ErrorCode.SERVICE_UNAVAILABLE


class InvalidInputError(WorkspaceRealizerError):
    """Well-formed but not allowed (a workspace without a path, a bad runtime config)."""

    code = ErrorCode.UNPROCESSABLE


class StateConflictError(WorkspaceRealizerError):
    """The request conflicts with the current state (open workspaces depend on it, ...)."""


class CloseBlockedError(WorkspaceRealizerError):
    """Close readiness is ``blocked``; ``details`` carries the reasons and the readiness."""

    code = ErrorCode.CLOSE_BLOCKED


class FenceError(StateConflictError):
    """A late step of a lifecycle saga met a newer lifecycle generation (a reopen or archive)."""

    code = ErrorCode.LIFECYCLE_CONFLICT


class DependentsError(StateConflictError):
    """Something open still depends on what is to be deleted."""

    code = ErrorCode.HAS_OPEN_DEPENDENTS


class IdentifierTakenError(StateConflictError):
    """An explicitly given issue identifier is used by another issue of the company."""

    code = ErrorCode.IDENTIFIER_TAKEN


class ReopenPendingError(StateConflictError):
    """The workspace was reopened minutes ago; archive waits until the reopen is consumed."""

    code = ErrorCode.REOPEN_PENDING


class NotReopenableError(StateConflictError):
    """The workspace is open, being archived, or could not be rebuilt."""

    code = ErrorCode.NOT_REOPENABLE


class PathRequiredError(WorkspaceRealizerError):
    """A project workspace needs ``cwd`` or ``repoUrl``."""

    code = ErrorCode.WORKSPACE_PATH_REQUIRED


class RequiresProjectError(WorkspaceRealizerError):
    """An isolated workspace needs a project workspace to branch from."""

    code = ErrorCode.WORKSPACE_WORKTREE_REQUIRES_PROJECT


class LowTrustViolationError(WorkspaceRealizerError):
    """An untrusted agent's run would not get an isolated worktree (DECISIONS 11)."""

    code = ErrorCode.LOW_TRUST_VIOLATION


class WorkspaceValidationError(WorkspaceRealizerError):
    """A workspace on disk is not what the record says (and cannot be repaired safely)."""

    code = ErrorCode.WORKSPACE_VALIDATION_FAILED


class HostStepError(WorkspaceRealizerError):
    """A shell step the work depends on failed on the host (the provision command)."""

    code = ErrorCode.WORKSPACE_PROVISION_FAILED


class CheckoutFailedError(WorkspaceRealizerError):
    """The managed clone of a repo-only project workspace failed (nothing was left behind)."""

    code = ErrorCode.MANAGED_CHECKOUT_FAILED


class BranchReconcileRefusedError(WorkspaceRealizerError):
    """A branch reconcile's conditions do not hold (reference §4.3); ``details`` has the evidence."""

    code = ErrorCode.BRANCH_RECONCILE_REFUSED
