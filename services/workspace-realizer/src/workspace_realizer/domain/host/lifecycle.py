"""The lifecycle of an execution workspace: open states, the archive saga and reopen.

Statuses (ARCHITECTURE §1, DECISIONS 12): ``active``, ``idle``, ``in_review`` (open) and
``archived``, ``cleanup_failed`` (closed). Archive is a saga (ARCHITECTURE §4.4): ``ArchiveStarted``
bumps the lifecycle generation and marks the workspace closing; its outcome (``Archived`` or
``CleanupFailed``) is recorded only at that same generation, so a late step never overwrites a
newer reopen or archive. A reopen bumps the generation again and sets a five-minute fence that
keeps archive and the reaper away until a realization consumes the reopened workspace.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final, Literal

from eventsourcing.domain import event

from eventstore.topics import keep_old_topics
from workspace_realizer.domain.base import CompanyScoped
from workspace_realizer.domain.errors import (
    FenceError,
    NotReopenableError,
    ReopenPendingError,
    StateConflictError,
)
from workspace_realizer.domain.host.records import ArchiveOutcome, RescueRefRecord

__all__ = [
    "CLOSED_STATUSES",
    "OPEN_STATUSES",
    "REOPEN_FENCE",
    "StatusRequest",
    "WorkspaceLifecycle",
    "status_request",
]

OPEN_STATUSES: Final = ("active", "idle", "in_review")
CLOSED_STATUSES: Final = ("archived", "cleanup_failed")
REOPEN_FENCE: Final = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class StatusRequest:
    """What a ``status`` in a board's workspace update asks for: a plain change of ``status``
    (None for none), or a lifecycle step to run after the other changes."""

    status: str | None = None
    then: Literal["archive", "reopen"] | None = None


def status_request(current: str, requested: str | None) -> StatusRequest:
    """What a board's ``status`` (None when not sent) means for a workspace now ``current``
    (DECISIONS 12): ``archived`` archives, ``active`` on a closed workspace reopens, any other is
    a plain change the use case checks."""
    if requested is None:
        return StatusRequest()
    if requested == "archived":
        return StatusRequest(then="archive")
    if requested == "active" and current in CLOSED_STATUSES:
        return StatusRequest(then="reopen")
    return StatusRequest(status=requested)


class WorkspaceLifecycle(CompanyScoped):
    """Lifecycle state and transitions; :class:`ExecutionWorkspace` adds realization and use."""

    event_aggregate = "workspace"

    if TYPE_CHECKING:  # set by the created event; annotations here would become event fields
        status: str
        lifecycle_generation: int
        closing: bool
        cwd: str | None
        branch_name: str | None
        provider_type: str
        last_used_at: datetime
        closed_at: datetime | None
        cleanup_reason: str | None
        cleanup_eligible_at: datetime | None
        reopened_at: datetime | None
        rescue_refs: list[RescueRefRecord]

    # -- state -----------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """True for ``active``, ``idle`` and ``in_review``."""
        return self.status in OPEN_STATUSES

    @property
    def is_worktree(self) -> bool:
        """True when the workspace is a git worktree Clipyard manages on disk."""
        return self.provider_type == "git_worktree"

    def check_open(self) -> None:
        """Raise ``StateConflictError`` unless the workspace is open and not closing."""
        if self.closing:
            raise StateConflictError(
                "This workspace is being archived; wait for the archive to finish.",
                workspaceId=str(self.id),
            )
        if not self.is_open:
            raise StateConflictError(
                f"This workspace is {self.status}; reopen it (PATCH status=active) first.",
                workspaceId=str(self.id),
                status=self.status,
            )

    def reopen_fenced(self, now: datetime) -> bool:
        """True while a reopen is younger than five minutes and no realization consumed it."""
        return self.reopened_at is not None and now - self.reopened_at < REOPEN_FENCE

    # -- archive saga ----------------------------------------------------------------------

    def start_archive(
        self, at: datetime, *, trigger: str = "manual", expected_generation: int | None = None
    ) -> int:
        """Begin archiving; return the generation every later step must carry.

        Raises:
            StateConflictError: Already closing or archived.
            ReopenPendingError: Fenced by a recent reopen.
            FenceError: ``expected_generation`` is not the current one.
        """
        if expected_generation is not None and expected_generation != self.lifecycle_generation:
            raise FenceError(
                f"The workspace is at lifecycle generation {self.lifecycle_generation}, "
                f"not {expected_generation}; read it again.",
                workspaceId=str(self.id),
            )
        if self.closing or self.status == "archived":
            raise StateConflictError(
                f"This workspace is {'being archived' if self.closing else 'archived'} already.",
                workspaceId=str(self.id),
            )
        if self.reopen_fenced(at):
            raise ReopenPendingError(
                "Execution workspace was reopened and cannot be archived right now; "
                "retry in a few minutes.",
                workspaceId=str(self.id),
            )
        self._archive_started(generation=self.lifecycle_generation + 1, at=at, trigger=trigger)
        return self.lifecycle_generation

    @event("ArchiveStarted")
    def _archive_started(self, generation: int, at: datetime, trigger: str) -> None:
        self.lifecycle_generation = generation
        self.closing = True

    def check_generation(self, generation: int) -> None:
        """Raise ``FenceError`` unless an archive at ``generation`` is still in progress."""
        if not self.closing or self.lifecycle_generation != generation:
            raise FenceError(
                f"Archive step of generation {generation} skipped: the workspace is now at "
                f"generation {self.lifecycle_generation}.",
                workspaceId=str(self.id),
            )

    def finish_archive(self, generation: int, at: datetime, outcome: ArchiveOutcome) -> None:
        """Cleanup was verified on disk (what it did: ``outcome``): the workspace is ``archived``."""
        self.check_generation(generation)
        self._archived(
            generation=generation,
            at=at,
            branch_name=self.branch_name,
            trigger=outcome.trigger,
            cleanup_reason=outcome.cleanup_reason,
            rescue_ref=outcome.rescue_ref,
            branch_deleted=outcome.branch_deleted,
            branch_kept_reason=outcome.branch_kept_reason,
            worktree_removed=outcome.worktree_removed,
            runtime_services_stopped=outcome.runtime_services_stopped,
            detached_issue_ids=outcome.detached_issue_ids,
            cleanup_warnings=outcome.cleanup_warnings,
            operation_id=outcome.operation_id,
        )

    @event("Archived")
    def _archived(
        self,
        generation: int,
        at: datetime,
        branch_name: str | None,
        trigger: str,
        cleanup_reason: str | None,
        rescue_ref: RescueRefRecord | None,
        branch_deleted: bool,
        branch_kept_reason: str | None,
        worktree_removed: bool,
        runtime_services_stopped: int,
        detached_issue_ids: list[str],
        cleanup_warnings: list[str],
        operation_id: str | None,
    ) -> None:
        self.status, self.closing, self.closed_at = "archived", False, at
        self.cleanup_reason, self.reopened_at = cleanup_reason, None
        self.rescue_refs = [*self.rescue_refs, *([rescue_ref] if rescue_ref else [])]

    def fail_cleanup(
        self,
        generation: int,
        at: datetime,
        *,
        error: str,
        rescue_ref: RescueRefRecord | None,
        operation_id: str | None,
    ) -> None:
        """Cleanup could not be verified: the workspace is ``cleanup_failed`` (the reaper retries)."""
        self.check_generation(generation)
        self._cleanup_failed(
            generation=generation,
            at=at,
            error=error,
            rescue_ref=rescue_ref,
            operation_id=operation_id,
        )

    @event("CleanupFailed")
    def _cleanup_failed(
        self,
        generation: int,
        at: datetime,
        error: str,
        rescue_ref: RescueRefRecord | None,
        operation_id: str | None,
    ) -> None:
        self.status, self.closing, self.closed_at = "cleanup_failed", False, at
        self.cleanup_reason, self.reopened_at = error, None
        self.rescue_refs = [*self.rescue_refs, *([rescue_ref] if rescue_ref else [])]

    # -- reopen ----------------------------------------------------------------------------

    def check_reopenable(self, expected_generation: int | None = None) -> int:
        """Return the generation a reopen starts from.

        Raises:
            NotReopenableError: The workspace is open or being archived.
            FenceError: ``expected_generation`` is not the current one.
        """
        if self.closing or self.is_open:
            raise NotReopenableError(
                "Only an archived or cleanup_failed workspace can be reopened; this one is "
                f"{'being archived' if self.closing else self.status}.",
                workspaceId=str(self.id),
                status=self.status,
            )
        if expected_generation is not None and expected_generation != self.lifecycle_generation:
            raise FenceError(
                f"The workspace is at lifecycle generation {self.lifecycle_generation}, "
                f"not {expected_generation}; read it again.",
                workspaceId=str(self.id),
            )
        return self.lifecycle_generation

    def reopen(
        self,
        generation: int,
        at: datetime,
        *,
        restored_from: RescueRefRecord | None,
        operation_id: str | None,
    ) -> None:
        """The worktree was rebuilt (and the rescue restored): the workspace is ``active``."""
        self.check_reopenable(generation)
        self._reopened(
            generation=generation + 1,
            at=at,
            cwd=self.cwd,
            branch_name=self.branch_name,
            restored_from=restored_from,
            operation_id=operation_id,
        )

    @event("Reopened")
    def _reopened(
        self,
        generation: int,
        at: datetime,
        cwd: str | None,
        branch_name: str | None,
        restored_from: RescueRefRecord | None,
        operation_id: str | None,
    ) -> None:
        self.lifecycle_generation, self.status = generation, "active"
        self.closed_at = self.cleanup_reason = self.cleanup_eligible_at = None
        self.last_used_at = self.reopened_at = at

    def fail_reopen(
        self, generation: int, at: datetime, *, error: str, operation_id: str | None
    ) -> None:
        """The rebuild failed: the workspace stays closed with ``cleanupReason=reopen_failed``."""
        self.check_reopenable(generation)
        self._reopen_failed(
            generation=generation + 1, at=at, error=error, operation_id=operation_id
        )

    @event("ReopenFailed")
    def _reopen_failed(
        self, generation: int, at: datetime, error: str, operation_id: str | None
    ) -> None:
        self.lifecycle_generation, self.cleanup_reason = generation, "reopen_failed"


# Events stored before this module moved here (issue 16) name it workspace_realizer.domain.lifecycle.
keep_old_topics("workspace_realizer.domain.lifecycle", sys.modules[__name__])
