"""The runtime of one target (an execution workspace or a project workspace): the desired state
of its services (reference §6.5), its lazy runtime provisioning (DECISIONS 1) and its
runtime-control lease (reference §6.8, §3.5).

The decisions are the pure rules' (``desired.py``, ``leases.py``); this aggregate records them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict
from uuid import UUID, uuid5

from eventsourcing.domain import event

from runtime_supervisor.domain.base import CompanyScoped
from runtime_supervisor.domain.leases import ControlLease, ReclaimedFrom

if TYPE_CHECKING:
    from eventsourcing.domain import CanMutateAggregate

__all__ = [
    "LEASE_OUTCOMES",
    "ControlLeaseState",
    "LeaseOwner",
    "Provisioning",
    "ProvisioningState",
    "TargetAbout",
    "TargetKind",
    "WorkspaceRuntime",
    "parse_target_key",
    "runtime_id",
    "target_key",
]

TargetKind = Literal["execution_workspace", "project_workspace"]
LEASE_OUTCOMES: Final = ("claimed", "renewed", "reclaimed")
"""The lease outcomes that change the lease (``bypassed`` changes nothing)."""

_NAMESPACE: Final = UUID("7c4e2a91-0d3b-5f6e-9a8c-2b1d0e3f4a5c")


def target_key(kind: TargetKind, target_id: str) -> str:
    """``execution_workspace:<id>`` or ``project_workspace:<id>``."""
    return f"{kind}:{target_id}"


def parse_target_key(key: str) -> tuple[TargetKind, str]:
    """The kind and id of a target key."""
    kind, _, target_id = key.partition(":")
    if kind not in ("execution_workspace", "project_workspace") or not target_id:
        raise ValueError(f"not a target key: {key!r}")
    return kind, target_id  # type: ignore[return-value]


def runtime_id(key: str) -> UUID:
    """The id of a target's runtime record (a UUID5 of its target key)."""
    return uuid5(_NAMESPACE, key)


@dataclass(frozen=True, slots=True)
class Provisioning:
    """The last runtime provisioning of a target: ``running``, ``succeeded`` or ``failed``, for
    the checkout it ran in (``checkout_version``: a rebuilt or reopened worktree needs it again)."""

    status: Literal["running", "succeeded", "failed"]
    operation_id: str | None
    command: str | None
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    checkout_version: int


class ProvisioningState(TypedDict):
    """:class:`Provisioning` as the aggregate keeps it (built from its provisioning events)."""

    status: Literal["running", "succeeded", "failed"]
    operation_id: str | None
    command: str | None
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    checkout_version: int


class _Unstarted(TypedDict):
    """What an end recorded with no start before it assumes of the start."""

    command: None
    started_at: None
    checkout_version: int


class TargetAbout(TypedDict):
    """The target a runtime's stored event is about (its ``about``)."""

    execution_workspace_id: str | None
    project_workspace_id: str | None


class LeaseOwner(TypedDict):
    """The owner of a runtime-control lease, as its lease events store it (``owner``)."""

    owner_key: str
    owner_issue_id: str | None
    owner_run_id: str | None
    owner_agent_id: str | None


class ControlLeaseState(LeaseOwner):
    """The runtime-control lease as the aggregate keeps it (built from its lease events)."""

    last_action: str | None
    claimed_at: datetime
    renewed_at: datetime
    expires_at: datetime
    reclaimed_from: ReclaimedFrom | None


class WorkspaceRuntime(CompanyScoped):
    """The supervisor's facts about one target's runtime as a whole."""

    class Event(CompanyScoped.Event):
        """Base of a target runtime's events."""

        about: TargetAbout | None = dataclasses.field(default=None, kw_only=True)
        """The target (``execution_workspace_id``, ``project_workspace_id``), so the published
        event is built from the stored one alone."""

    def trigger_event(self, event_class: type[CanMutateAggregate[UUID]], **kwargs: Any) -> None:
        """Trigger an event stamped with its target."""
        about: TargetAbout = {
            "execution_workspace_id": self.execution_workspace_id,
            "project_workspace_id": self.project_workspace_id,
        }
        kwargs.setdefault("about", about)
        super().trigger_event(event_class, **kwargs)

    @staticmethod
    def create_id(target_key: str) -> UUID:
        """One runtime record per target."""
        return runtime_id(target_key)

    @event("Registered")
    def __init__(
        self,
        *,
        target_key: str,
        company_id: str,
        execution_workspace_id: str | None,
        project_workspace_id: str | None,
    ) -> None:
        self.company_id = company_id
        self.target_key = target_key
        self.execution_workspace_id = execution_workspace_id
        self.project_workspace_id = project_workspace_id
        self.desired_state: str | None = None
        self.service_states: dict[str, str] = {}
        self.provisioning: ProvisioningState | None = None
        self.control_lease: ControlLeaseState | None = None

    # -- desired state ---------------------------------------------------------------------

    def change_desired(self, desired_state: str, service_states: dict[str, str]) -> bool:
        """Record the desired state the patch rule computed; False when unchanged."""
        states = {str(k): v for k, v in service_states.items()}
        if desired_state == self.desired_state and states == self.service_states:
            return False
        self._desired_state_changed(desired_state=desired_state, service_states=states)
        return True

    @event("DesiredStateChanged")
    def _desired_state_changed(self, desired_state: str, service_states: dict[str, str]) -> None:
        self.desired_state = desired_state
        self.service_states = dict(service_states)

    # -- lazy runtime provisioning ---------------------------------------------------------

    @event("ProvisioningStarted")
    def start_provisioning(
        self, operation_id: str | None, command: str, at: datetime, checkout_version: int
    ) -> None:
        """The runtime provision command began (the orchestration keeps it single-flight)."""
        self.provisioning = {
            "status": "running",
            "operation_id": operation_id,
            "command": command,
            "started_at": at,
            "finished_at": None,
            "error": None,
            "checkout_version": checkout_version,
        }

    @event("ProvisioningSucceeded")
    def succeed_provisioning(self, operation_id: str | None, at: datetime) -> None:
        """The runtime provision command succeeded: ``provisioned``."""
        self.provisioning = {
            **(self.provisioning or _unknown_start()),
            "status": "succeeded",
            "operation_id": operation_id,
            "finished_at": at,
            "error": None,
        }

    @event("ProvisioningFailed")
    def fail_provisioning(self, operation_id: str | None, at: datetime, error: str) -> None:
        """The runtime provision command failed; the next start runs it again."""
        self.provisioning = {
            **(self.provisioning or _unknown_start()),
            "status": "failed",
            "operation_id": operation_id,
            "finished_at": at,
            "error": error,
        }

    def provisioning_record(self) -> Provisioning | None:
        """The last provisioning, if any."""
        return Provisioning(**self.provisioning) if self.provisioning else None

    # -- runtime-control lease -------------------------------------------------------------

    def claim_lease(
        self,
        *,
        outcome: str,
        owner_key: str,
        owner_issue_id: str | None,
        owner_run_id: str | None,
        owner_agent_id: str | None,
        action: str | None,
        at: datetime,
        expires_at: datetime,
        reclaimed_from: ReclaimedFrom | None = None,
    ) -> None:
        """Record a lease the rule granted: ``claimed``, ``renewed`` or ``reclaimed`` (which
        names whom it was taken from, ``reclaimed_from``)."""
        owner: LeaseOwner = {
            "owner_key": owner_key,
            "owner_issue_id": owner_issue_id,
            "owner_run_id": owner_run_id,
            "owner_agent_id": owner_agent_id,
        }
        if outcome == "claimed":
            self._lease_claimed(owner=owner, action=action, at=at, expires_at=expires_at)
        elif outcome == "renewed":
            self._lease_renewed(owner=owner, action=action, at=at, expires_at=expires_at)
        elif outcome == "reclaimed":
            if reclaimed_from is None:
                raise ValueError("a reclaimed lease names whom it was taken from")
            self._lease_reclaimed(
                owner=owner,
                action=action,
                at=at,
                expires_at=expires_at,
                reclaimed_from=reclaimed_from.copy(),
            )
        else:
            raise ValueError(f"a lease outcome to record is one of {', '.join(LEASE_OUTCOMES)}")

    def _hold(
        self,
        owner: LeaseOwner,
        action: str | None,
        at: datetime,
        expires_at: datetime,
        *,
        claimed_at: datetime | None = None,
        reclaimed_from: ReclaimedFrom | None = None,
    ) -> None:
        self.control_lease = {
            **owner,
            "last_action": action,
            "claimed_at": claimed_at or at,
            "renewed_at": at,
            "expires_at": expires_at,
            "reclaimed_from": reclaimed_from,
        }

    @event("ControlLeaseClaimed")
    def _lease_claimed(
        self, owner: LeaseOwner, action: str | None, at: datetime, expires_at: datetime
    ) -> None:
        self._hold(owner, action, at, expires_at)

    @event("ControlLeaseRenewed")
    def _lease_renewed(
        self, owner: LeaseOwner, action: str | None, at: datetime, expires_at: datetime
    ) -> None:
        lease = self.control_lease
        claimed_at = (
            lease["claimed_at"] if lease and lease["owner_key"] == owner["owner_key"] else at
        )
        self._hold(owner, action, at, expires_at, claimed_at=claimed_at)

    @event("ControlLeaseReclaimed")
    def _lease_reclaimed(
        self,
        owner: LeaseOwner,
        action: str | None,
        at: datetime,
        expires_at: datetime,
        reclaimed_from: ReclaimedFrom,
    ) -> None:
        self._hold(owner, action, at, expires_at, reclaimed_from=reclaimed_from)

    def release_lease(self, at: datetime, *, owner_key: str | None = None) -> bool:
        """Drop the lease: the owner's own release (``owner_key``), or any owner's (None: forced,
        e.g. by an archive); False when there is nothing to release."""
        if self.control_lease is None:
            return False
        if owner_key is not None and owner_key != self.control_lease["owner_key"]:
            return False
        self._lease_released(
            at=at, owner_key=self.control_lease["owner_key"], forced=owner_key is None
        )
        return True

    @event("ControlLeaseReleased")
    def _lease_released(self, at: datetime, owner_key: str, forced: bool) -> None:
        self.control_lease = None

    def lease_record(self) -> ControlLease | None:
        """The current lease as recorded, as the lease rule takes it (possibly expired: the
        rule judges)."""
        lease = self.control_lease
        if lease is None:
            return None
        return ControlLease(
            owner_key=lease["owner_key"],
            owner_issue_id=lease["owner_issue_id"],
            owner_run_id=lease["owner_run_id"],
            owner_agent_id=lease["owner_agent_id"],
            last_action=lease["last_action"] or "",
            claimed_at=lease["claimed_at"],
            renewed_at=lease["renewed_at"],
            expires_at=lease["expires_at"],
        )


def _unknown_start() -> _Unstarted:
    return {"command": None, "started_at": None, "checkout_version": 0}
