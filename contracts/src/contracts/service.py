"""Messages every service answers or publishes: audit, replay verification, operations, inbox.

Subjects: ``ws.qry.<service>.audit``, ``ws.qry.<service>.replay_verify``,
``ws.qry.<service>.operation``; events ``ws.evt.operation.<event>.<service>`` and
``ws.evt.inbox.message_rejected.<service>``. ``$SRV.STATS.<service name>`` shows
:class:`ReadModelHealth` as the ``data`` of the :data:`READ_MODEL_HEALTH_ENDPOINT` endpoint.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

import msgspec

from contracts.base import Command, Event, Query, Struct

__all__ = [
    "READ_MODEL_HEALTH_ENDPOINT",
    "AuditTrail",
    "GetAuditTrail",
    "GetOperation",
    "InboxMessageRejected",
    "OperationFailure",
    "OperationFinished",
    "OperationProgress",
    "OperationProgressed",
    "OperationStarted",
    "OperationStatus",
    "OperationView",
    "ReadModelHealth",
    "ReplayReport",
    "StopAllRuntimeServices",
    "StopAllRuntimeServicesResult",
    "StoredEvent",
    "VerifyReplay",
]

OperationStatus = Literal["running", "succeeded", "failed"]


class GetAuditTrail(Query, tag="service.get_audit_trail.v1", frozen=True, kw_only=True):
    """Ask a service for the stored history of one aggregate it owns."""

    aggregate_id: str
    limit: int = 1000
    offset: int = 0


class StoredEvent(Struct, frozen=True, kw_only=True):
    """One stored event as an operator sees it in an audit trail."""

    aggregate_id: str
    aggregate_version: int
    type: str
    """Its public type (``workspace.realized.v1``), or for an event never published the type
    derived from its aggregate and name (``workspace.provisioned.v1``;
    :mod:`contracts.event_types`)."""
    occurred_at: datetime
    notification_id: int | None = None
    actor: dict[str, Any] | None = None
    run_id: str | None = None
    reason: str | None = None
    data: dict[str, Any] = msgspec.field(default_factory=dict)
    label: str = ""
    """What a person reads for its type (``Workspace provisioned``)."""
    stored_type: str | None = None
    """The stored class (``ExecutionWorkspace.Provisioned``), for whoever reads the store."""


class AuditTrail(Struct, frozen=True, kw_only=True):
    """The stored history of one aggregate, oldest first."""

    service: str
    aggregate_id: str
    aggregate_type: str | None
    total: int
    events: list[StoredEvent]


class VerifyReplay(Query, tag="service.verify_replay.v1", frozen=True, kw_only=True):
    """Ask a service to rebuild its read models from its store in a fresh instance and compare."""


class ReplayReport(Struct, frozen=True, kw_only=True):
    """The outcome of a replay verification."""

    service: str
    ok: bool
    notifications_replayed: int
    read_models: list[str]
    differences: list[str]
    duration_ms: float


READ_MODEL_HEALTH_ENDPOINT: Final = "replay_verify"
"""The common endpoint whose ``$SRV.STATS`` ``data`` is the service's :class:`ReadModelHealth`."""


class ReadModelHealth(Struct, frozen=True, kw_only=True):
    """How a live service's read models stand (``$SRV.STATS``; ``clipyard status`` shows it)."""

    projection_failures: int
    """Stored events whose projection raised since the read models were last rebuilt (each is
    logged as ``read-model projection failed``); the read models may be wrong while it is not 0."""
    notifications_projected: int
    projected_upto: int
    instance: str = ""
    """This instance's id (``CLIPYARD_INSTANCE_ID``)."""
    role: str = ""
    """``leader`` (it holds the service's lease and runs its singleton work) or ``standby``."""
    leader: str | None = None
    """The instance holding the lease when this one last looked."""
    lease_token: int | None = None
    """The lease's fencing token while this instance holds it."""
    other_leases: dict[str, int] = msgspec.field(default_factory=dict)
    """The service's other leases this instance holds now, name -> fencing token (the
    realizer's host part holds ``host:<node>``)."""


class GetOperation(Query, tag="service.get_operation.v1", frozen=True, kw_only=True):
    """Ask a service about one of its long-work operations."""

    operation_id: str


class OperationFailure(Struct, frozen=True, kw_only=True):
    """Why an operation failed (``error`` of :class:`OperationView` and
    :class:`OperationFinished`): an error-catalogue ``code`` and a message for the client."""

    code: str
    message: str


class OperationProgress(Struct, frozen=True, kw_only=True):
    """How far running long work has come: the step it is at (a workspace operation's ``phase``,
    e.g. ``managed_clone`` or ``workspace_provision``), what that step says (git's own phase,
    ``Receiving objects``), a percent when the step knows one, and the workspace operation whose
    output grows meanwhile."""

    phase: str
    message: str = ""
    percent: int | None = None
    workspace_operation_id: str | None = None
    execution_workspace_id: str | None = None
    project_workspace_id: str | None = None
    at: datetime | None = None


class OperationView(Struct, frozen=True, kw_only=True):
    """An operation as ``GET /api/operations/{id}`` shows it."""

    id: str
    kind: str
    status: OperationStatus
    result: Any = None
    error: OperationFailure | None = None
    workspace_operation_ids: list[str] = msgspec.field(default_factory=list)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    progress: OperationProgress | None = None
    """The last progress the work reported (None until it reports one)."""


class OperationStarted(Event, tag="operation.started.v1", frozen=True, kw_only=True):
    """A service began long work that may outlive the request that asked for it."""

    kind: str


class OperationProgressed(Event, tag="operation.progressed.v1", frozen=True, kw_only=True):
    """Long work reached a new step, or moved on within one (reported at most every second or
    so, and at every change of phase); output never travels in it."""

    kind: str
    progress: OperationProgress


class OperationFinished(Event, tag="operation.finished.v1", frozen=True, kw_only=True):
    """Long work ended; ``result`` is what the synchronous call would have returned."""

    kind: str
    status: OperationStatus
    result: Any = None
    error: OperationFailure | None = None


class InboxMessageRejected(Event, tag="inbox.message_rejected.v1", frozen=True, kw_only=True):
    """A consumed upstream message could not be processed and was terminated (a poison message)."""

    upstream: str
    subject: str
    stream_sequence: int
    error: str


class StopAllRuntimeServices(Command, tag="runtime_service.stop_all.v1", frozen=True, kw_only=True):
    """Stop every runtime service and slot on one node (``clipyard up`` on Ctrl-C)."""

    node: str = "local"


class StopAllRuntimeServicesResult(Struct, frozen=True, kw_only=True):
    """What a stop-all did."""

    node: str
    services_stopped: int
    slots_stopped: int
