"""Runtime-control lease decisions for agent actors (reference §6.8, §3.5; case 63).

One owner at a time controls a workspace's runtime: the owner key is ``issue:<id>`` when the agent
works on an issue, else ``run:<id>``, else ``agent:<id>``. The lease lasts 30 minutes from its last
use. Board, admin and system actors (and agents with no owner at all) bypass it. A stale owner
(expired lease, owner issue gone or no longer active, owner run gone or ended) is reclaimed;
any other owner makes the request a 409 ``workspace_runtime_lease_conflict``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final, Literal, TypedDict

__all__ = [
    "ELIGIBLE_ISSUE_STATUSES",
    "LEASE_TTL",
    "TERMINAL_RUN_STATUSES",
    "ControlLease",
    "LeaseConflict",
    "LeaseConflictDetails",
    "LeaseDecision",
    "ReclaimReason",
    "ReclaimedFrom",
    "decide",
    "owner_key",
    "stale_reason",
]

LEASE_TTL: Final = timedelta(minutes=30)
ELIGIBLE_ISSUE_STATUSES: Final = frozenset(
    {"backlog", "todo", "in_progress", "in_review", "ready_for_qa", "blocked"}
)
TERMINAL_RUN_STATUSES: Final = frozenset(
    {"succeeded", "interrupted", "failed", "cancelled", "timed_out"}
)

ReclaimReason = Literal[
    "expired",
    "owner_issue_terminal",
    "owner_issue_missing",
    "owner_run_terminal",
    "owner_run_missing",
]
StatusOf = Callable[[str], str | None]
"""The current status of an issue or a run by id; ``None`` when it is unknown (missing)."""


def owner_key(
    actor_type: str, issue_id: str | None, run_id: str | None, agent_id: str | None
) -> str | None:
    """The lease owner key of an actor, or ``None`` when the lease is bypassed.

    Args:
        actor_type: ``agent``, ``board``, ``admin`` or ``system``.
        issue_id: The issue the agent works on, if any.
        run_id: The agent's run, if any.
        agent_id: The agent.

    Returns:
        ``issue:<id>``, else ``run:<id>``, else ``agent:<id>`` for agents; ``None`` for other
        actors and for agents with none of the three.
    """
    if actor_type != "agent":
        return None
    for prefix, value in (("issue", issue_id), ("run", run_id), ("agent", agent_id)):
        if value:
            return f"{prefix}:{value}"
    return None


@dataclass(frozen=True, kw_only=True)
class ControlLease:
    """The runtime-control lease held on a workspace."""

    owner_key: str
    owner_issue_id: str | None
    owner_run_id: str | None
    owner_agent_id: str | None
    last_action: str
    claimed_at: datetime
    renewed_at: datetime
    expires_at: datetime


class ReclaimedFrom(TypedDict):
    """Whom a reclaimed lease was taken from and why, as the ``ControlLeaseReclaimed`` event
    stores it (camelCase, like the wire's ``reclaimedFrom``)."""

    ownerKey: str
    reason: str
    """A :data:`ReclaimReason`."""


class LeaseConflictDetails(TypedDict):
    """The details of the 409 ``workspace_runtime_lease_conflict`` (reference §6.8)."""

    executionWorkspaceId: str | None
    requestedAction: str
    requestedOwnerKey: str
    ownerKey: str
    ownerIssueId: str | None
    ownerRunId: str | None
    ownerAgentId: str | None
    lastAction: str
    claimedAt: datetime
    renewedAt: datetime
    expiresAt: datetime
    remediation: str


@dataclass(frozen=True, kw_only=True)
class LeaseConflict:
    """Who holds the lease a request was refused for, and what the requester may do."""

    execution_workspace_id: str | None
    requested_action: str
    requested_owner_key: str
    holder: ControlLease
    remediation: str

    def details(self) -> LeaseConflictDetails:
        """The 409's details."""
        holder = self.holder
        return {
            "executionWorkspaceId": self.execution_workspace_id,
            "requestedAction": self.requested_action,
            "requestedOwnerKey": self.requested_owner_key,
            "ownerKey": holder.owner_key,
            "ownerIssueId": holder.owner_issue_id,
            "ownerRunId": holder.owner_run_id,
            "ownerAgentId": holder.owner_agent_id,
            "lastAction": holder.last_action,
            "claimedAt": holder.claimed_at,
            "renewedAt": holder.renewed_at,
            "expiresAt": holder.expires_at,
            "remediation": self.remediation,
        }


@dataclass(frozen=True, kw_only=True)
class LeaseDecision:
    """What a control request does to the lease.

    ``lease`` is the lease to keep after a ``claimed``, ``renewed`` or ``reclaimed`` outcome;
    ``reclaimed_from`` is ``{ownerKey, reason}`` after a reclaim; ``conflict`` holds the holder
    and the remediation of the 409 (reference §6.8) when the outcome is ``conflict``.
    """

    outcome: Literal["bypassed", "claimed", "renewed", "reclaimed", "conflict"]
    lease: ControlLease | None = None
    reclaimed_from: ReclaimedFrom | None = None
    conflict: LeaseConflict | None = None

    @property
    def message(self) -> str:
        """A one-line account of the decision (the 409's message for a conflict)."""
        if self.conflict is None:
            return f"Runtime-control lease {self.outcome}"
        holder = self.conflict.holder
        return (
            f"The runtime services of this workspace are controlled by {holder.owner_key} "
            f"(last action {holder.last_action}) until {holder.expires_at.isoformat()}"
        )


def stale_reason(
    lease: ControlLease, now: datetime, issue_status: StatusOf, run_status: StatusOf
) -> ReclaimReason | None:
    """Why the lease's owner no longer holds it, or ``None`` while it does.

    An issue owner is judged by its issue (a finished run of an active issue keeps the lease), a
    run owner by its run, an agent owner by expiry alone.
    """
    if now >= lease.expires_at:
        return "expired"
    if lease.owner_issue_id:
        status = issue_status(lease.owner_issue_id)
        if status is None:
            return "owner_issue_missing"
        return None if status in ELIGIBLE_ISSUE_STATUSES else "owner_issue_terminal"
    if lease.owner_run_id:
        status = run_status(lease.owner_run_id)
        if status is None:
            return "owner_run_missing"
        return "owner_run_terminal" if status in TERMINAL_RUN_STATUSES else None
    return None


def decide(
    current: ControlLease | None,
    requested_owner_key: str | None,
    *,
    issue_id: str | None,
    run_id: str | None,
    agent_id: str | None,
    action: str,
    now: datetime,
    issue_status: StatusOf,
    run_status: StatusOf,
    execution_workspace_id: str | None = None,
) -> LeaseDecision:
    """Decide a runtime control request against the workspace's current lease.

    Args:
        current: The lease held now, if any.
        requested_owner_key: :func:`owner_key` of the requester (``None``: bypassed).
        issue_id: The requester's issue.
        run_id: The requester's run.
        agent_id: The requesting agent.
        action: ``start``, ``stop``, ``restart`` or ``run``.
        now: The current time (timezone-aware).
        issue_status: An issue's status by id (``None`` when missing or hidden).
        run_status: A run's status by id (``None`` when missing).
        execution_workspace_id: The target, named in conflict details.

    Returns:
        ``bypassed``, ``claimed``, ``renewed`` (same owner), ``reclaimed`` (stale owner) or
        ``conflict``.
    """
    if requested_owner_key is None:
        return LeaseDecision(outcome="bypassed")
    mine = ControlLease(
        owner_key=requested_owner_key,
        owner_issue_id=issue_id,
        owner_run_id=run_id,
        owner_agent_id=agent_id,
        last_action=action,
        claimed_at=now,
        renewed_at=now,
        expires_at=now + LEASE_TTL,
    )
    if current is None:
        return LeaseDecision(outcome="claimed", lease=mine)
    if current.owner_key == requested_owner_key:
        return LeaseDecision(outcome="renewed", lease=replace(mine, claimed_at=current.claimed_at))
    reason = stale_reason(current, now, issue_status, run_status)
    if reason is not None:
        return LeaseDecision(
            outcome="reclaimed",
            lease=mine,
            reclaimed_from={"ownerKey": current.owner_key, "reason": reason},
        )
    return LeaseDecision(
        outcome="conflict",
        conflict=_conflict(current, requested_owner_key, action, execution_workspace_id),
    )


def _conflict(
    current: ControlLease, requested: str, action: str, workspace_id: str | None
) -> LeaseConflict:
    remediation = (
        f"Do not retry this {action}: {current.owner_key} controls this workspace's runtime "
        f"services until {current.expires_at.isoformat()}. Continue without it, wait until that "
        "owner's issue is closed, its run ends or the lease expires, or ask a board user to "
        f"{action} the services."
    )
    return LeaseConflict(
        execution_workspace_id=workspace_id,
        requested_action=action,
        requested_owner_key=requested,
        holder=current,
        remediation=remediation,
    )
