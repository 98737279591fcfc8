"""Wakeup requests (reference §1.8): one per accepted wake, whether it queued a run or joined
one already queued (``coalesced``). ``queued | coalesced`` → ``claimed`` (its run started) →
``completed | failed | cancelled`` (its run ended)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID

from eventsourcing.domain import event

from eventstore import CompanyScoped

if TYPE_CHECKING:
    from heartbeat_controller.domain.records import ActorRecord, JsonObject

__all__ = ["CLOSED_WAKEUP_STATUSES", "WakeupRequest"]

CLOSED_WAKEUP_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})


class WakeupRequest(CompanyScoped):
    """One accepted wake of an agent (see the module's docstring)."""

    event_aggregate = "wakeup"

    @classmethod
    def request(cls, ident: UUID, **fields: Any) -> WakeupRequest:
        """A new request with the id chosen by the caller (its run names it before it exists);
        ``fields`` are those of ``__init__``."""
        return cls._create(cls.Requested, id=ident, **fields)  # type: ignore[attr-defined]

    @event("Requested")
    def __init__(
        self,
        *,
        company_id: str,
        agent_id: str,
        source: str,
        wake_reason: str | None,
        issue_id: str | None,
        payload: JsonObject | None,
        idempotency_key: str | None,
        requested_by: ActorRecord | None,
        status: str,
        queued_run_id: str,
        at: datetime,
    ) -> None:
        self.company_id = company_id
        self.agent_id = agent_id
        self.source = source
        self.wake_reason = wake_reason
        self.issue_id = issue_id
        self.payload = dict(payload) if payload is not None else None
        self.idempotency_key = idempotency_key
        self.requested_by = requested_by.copy() if requested_by is not None else None
        """The actor who asked (``{"type", "id"}``), as reference §1.8 ``requestedByActor*``."""
        self.status = status
        """``queued`` (it queued ``queued_run_id``) or ``coalesced`` (it joined it), then
        ``claimed`` and ``completed | failed | cancelled`` with its run."""
        self.accepted_as = status
        """What the wake was answered (``queued`` or ``coalesced``); never changes, so that a
        replay of its idempotency key answers the same."""
        self.queued_run_id = queued_run_id
        self.requested_at = at
        self.claimed_at: datetime | None = None
        self.finished_at: datetime | None = None
        self.error: str | None = None

    @property
    def closed(self) -> bool:
        """True once its run ended."""
        return self.status in CLOSED_WAKEUP_STATUSES

    def claim(self, at: datetime) -> None:
        """Its run started."""
        if self.status in ("queued", "coalesced"):
            self._claimed(at=at)

    @event("Claimed")
    def _claimed(self, at: datetime) -> None:
        self.status, self.claimed_at = "claimed", at

    def close(self, run_status: str, error: str | None, at: datetime) -> None:
        """Its run ended with ``run_status``: ``completed`` (succeeded), ``cancelled`` or
        ``failed`` (failed, timed out)."""
        if self.closed:
            return
        if run_status == "succeeded":
            self._completed(at=at)
        elif run_status == "cancelled":
            self._cancelled(at=at)
        else:
            self._failed(error=error or run_status, at=at)

    @event("Completed")
    def _completed(self, at: datetime) -> None:
        self.status, self.finished_at = "completed", at

    @event("Failed")
    def _failed(self, error: str, at: datetime) -> None:
        self.status, self.finished_at, self.error = "failed", at, error

    @event("Cancelled")
    def _cancelled(self, at: datetime) -> None:
        self.status, self.finished_at = "cancelled", at
