"""Long work as operations (ARCHITECTURE §2): answered in time, or ``accepted`` and polled.

A service that runs long work (a clone, a realize, a service start with readiness) runs it through
:class:`OperationRunner`. The work becomes an ``Operation`` aggregate in the service's own store;
if it ends before the request's deadline the caller gets the result at once, otherwise an
``Accepted {operationId}`` reply, and ``GET /api/operations/{id}`` later shows the same result.
Operations still ``running`` when a service starts were cut short by a stop or crash: they are
recorded as failed, so no one polls forever. Finding them reads only the operation events saved
since the previous start (a tracking row, :data:`OPERATIONS_CHECKED`, marks how far that start
looked), never the whole log again on top of the read-model rebuild.

Who may see an operation follows the access model (:mod:`servicekit.access`, ARCHITECTURE §5.1):
the admin and Clipyard itself every operation, a board its company's, an agent key only those its
agent started, a run token only those its run started; any other answers "not found", as for an
unknown id. Who started an operation is the cause stamped on its ``Started`` event (``actor`` and
``run_id``): :meth:`OperationRunner.run` creates it acting as the request's principal.

A failed operation shows the error's own message when the work raised a domain error (one with a
``code``), else a sentence naming the operation, to look up in the service's log.
"""

# The event classes ``Operation.Succeeded`` and ``Operation.Failed`` are made at class creation by
# eventsourcing's ``@event`` decorator (``Operation.Started`` is declared, for its ``apply``, and
# remade there too), so mypy cannot see them (nor their fields); ``attr-defined`` is off for this
# module for that reason only.
# mypy: disable-error-code=attr-defined

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypedDict

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import event
from eventsourcing.utils import get_topic

from contracts.service import (
    OperationFailure,
    OperationFinished,
    OperationProgress,
    OperationProgressed,
    OperationStarted,
    OperationView,
)
from eventstore import ClipyardAggregate, envelope

if TYPE_CHECKING:
    from eventstore import ServiceApplication
    from servicekit.operation_runner import OperationRunner

__all__ = [
    "OPERATIONS_CHECKED",
    "Operation",
    "OperationError",
    "OperationRunner",
    "ProgressFields",
    "RunningOperation",
    "StoredOperationError",
    "failure_details",
    "operation_to_contract",
    "report_progress",
    "running_since",
]

OPERATIONS_CHECKED: Final = "clipyard.operations"
"""Tracking name: the last notification a start has looked at for operations left running."""

_SCAN_BATCH: Final = 500


class ProgressFields(TypedDict):
    """What a ``Progressed`` event stores (the fields of
    :class:`~contracts.service.OperationProgress` but its time, which is the event's)."""

    phase: str
    message: str
    percent: int | None
    workspace_operation_id: str | None
    execution_workspace_id: str | None
    project_workspace_id: str | None


class StoredOperationError(TypedDict):
    """A failed operation's error as its ``Failed`` event stores it (a plain dict in the store;
    see :class:`OperationError`)."""

    code: str
    message: str


def _failure(stored: StoredOperationError | None) -> OperationFailure | None:
    """The error of a stored one, as the API shows it and ``operation.finished`` carries it."""
    if stored is None:
        return None
    return OperationFailure(code=stored["code"], message=stored["message"])


class Operation(ClipyardAggregate):
    """Long work of one service: its kind, status, and result or error.

    ``started_by`` and ``started_run_id`` are the ``actor`` and ``run_id`` stamped on its
    ``Started`` event (who started it, for which run), so stored operations replay as they were.
    """

    started_by: dict[str, str] | None = None
    """Who started the operation (``{"type", "id"}``), from its ``Started`` event."""
    started_run_id: str | None = None
    """The run it was started for, from its ``Started`` event."""

    class Started(ClipyardAggregate.Created):
        """The operation started; its cause (actor, run) says who started it."""

        kind: str
        company_id: str | None
        subject_id: str | None
        instance: str | None = None
        """The process running it: its micro id, new at each start (None before replicas)."""

        def apply(self, aggregate: Any) -> None:
            """Keep who started the operation, and for which run, on the aggregate."""
            aggregate.started_by = self.actor
            aggregate.started_run_id = self.run_id

    @event(Started)
    def __init__(
        self,
        kind: str,
        company_id: str | None,
        subject_id: str | None,
        instance: str | None = None,
    ) -> None:
        self.kind = kind
        self.company_id = company_id
        self.subject_id = subject_id
        self.instance = instance
        self.status = "running"
        self.result: Any = None
        self.error: StoredOperationError | None = None
        """``{"code", "message"}`` once failed (see :class:`OperationError`)."""
        self.workspace_operation_ids: list[str] = []
        self.finished_at: datetime | None = None
        self.progress: ProgressFields | None = None
        self.progress_at: datetime | None = None

    @event("Progressed")
    def report(self, progress: ProgressFields, kind: str, company_id: str | None) -> None:
        """The work reached a new step or moved on within one (``progress``: the fields of
        :class:`~contracts.service.OperationProgress`, without ``at``)."""
        self.progress = progress
        self.progress_at = self.modified_on

    @event("Succeeded")
    def succeed(self, result: Any, kind: str, company_id: str | None) -> None:
        self.status = "succeeded"
        self.result = result
        self.finished_at = self.modified_on

    @event("Failed")
    def fail(self, error: StoredOperationError, kind: str, company_id: str | None) -> None:
        self.status = "failed"
        self.error = error
        self.finished_at = self.modified_on

    def last_progress(self) -> OperationProgress | None:
        """The last progress reported (aggregates saved before progress existed have none)."""
        stored: ProgressFields | None = getattr(self, "progress", None)
        if stored is None:
            return None
        return OperationProgress(**stored, at=getattr(self, "progress_at", None))

    def view(self) -> OperationView:
        """The operation as the API shows it."""
        return OperationView(
            id=str(self.id),
            kind=self.kind,
            status=self.status,  # type: ignore[arg-type]
            result=self.result,
            error=_failure(self.error),
            workspace_operation_ids=list(self.workspace_operation_ids),
            started_at=self.created_on,
            finished_at=self.finished_at,
            progress=self.last_progress(),
        )


def operation_to_contract(domain_event: Any, *, service: str) -> Any:
    """The public event for a stored ``Operation`` event, or None if it is not one."""
    known = Operation.Started | Operation.Progressed | Operation.Succeeded | Operation.Failed
    if not isinstance(domain_event, known):
        return None
    fields = envelope(
        domain_event, aggregate="operation", company_id=domain_event.company_id, service=service
    )
    if isinstance(domain_event, Operation.Started):
        return OperationStarted(**fields, kind=domain_event.kind)
    if isinstance(domain_event, Operation.Progressed):
        progress = OperationProgress(**domain_event.progress, at=domain_event.timestamp)
        return OperationProgressed(**fields, kind=domain_event.kind, progress=progress)
    return OperationFinished(
        **fields,
        kind=domain_event.kind,
        status="succeeded" if isinstance(domain_event, Operation.Succeeded) else "failed",
        result=getattr(domain_event, "result", None),
        error=_failure(getattr(domain_event, "error", None)),
    )


def report_progress(app: ServiceApplication, operation_id: str, progress: ProgressFields) -> bool:
    """Record ``progress`` on a running operation (blocking: run it on the store's thread);
    False, and nothing saved, when the operation is unknown or has ended.

    Args:
        app: The service's application (the operation's store).
        operation_id: The operation.
        progress: The fields of :class:`~contracts.service.OperationProgress`, without ``at``.
    """
    try:
        operation: object = app.repository.get(uuid.UUID(operation_id))
    except (ValueError, AggregateNotFoundError):
        return False
    if not isinstance(operation, Operation) or operation.status != "running":
        return False
    operation.report(progress, operation.kind, operation.company_id)
    app.save(operation)
    return True


@dataclass(frozen=True)
class OperationError:
    """Why an operation failed: a catalogue ``code`` and a message for the client."""

    code: str
    message: str

    def stored(self) -> StoredOperationError:
        """The ``{"code", "message"}`` its ``Failed`` event stores (and the API shows)."""
        return {"code": self.code, "message": self.message}


def failure_details(error: BaseException, operation_id: str) -> OperationError:
    """The error an operation records for a failure of its work.

    Args:
        error: What the work raised.
        operation_id: The operation's id.

    Returns:
        A domain error's own code and message (it was written for the client); for anything else
        ``internal`` and a sentence naming the operation to look up in the service's log (where
        the trace is).
    """
    code = getattr(error, "code", None)
    if isinstance(code, str) and code and code != "internal":
        return OperationError(code=code, message=str(error) or code)
    return OperationError(
        code="internal",
        message=(
            f"The work failed unexpectedly; look for operation {operation_id} in the "
            "service's log for the cause."
        ),
    )


_TOPICS: Final = tuple(
    get_topic(cls) for cls in (Operation.Started, Operation.Succeeded, Operation.Failed)
)


@dataclass(frozen=True)
class RunningOperation:
    """An operation left running in the store: which, who runs it, where it started."""

    id: uuid.UUID
    instance: str | None
    notification_id: int


def running_since(app: ServiceApplication, checked: int) -> tuple[list[RunningOperation], int]:
    """Operations started after notification ``checked`` that have not finished (in order),
    and the last notification id the scan read."""
    running: dict[uuid.UUID, RunningOperation] = {}
    position = checked
    while True:
        notifications = app.recorder.select_notifications(
            start=position, limit=_SCAN_BATCH, topics=_TOPICS, inclusive_of_start=False
        )
        for notification in notifications:
            domain_event = app.mapper.to_domain_event(notification)
            if isinstance(domain_event, Operation.Started):
                op_id = domain_event.originator_id
                running[op_id] = RunningOperation(op_id, domain_event.instance, notification.id)
            else:
                running.pop(domain_event.originator_id, None)
        if notifications:
            position = notifications[-1].id
        if len(notifications) < _SCAN_BATCH:
            return list(running.values()), position


def __getattr__(name: str) -> Any:
    """``OperationRunner`` lives in :mod:`servicekit.operation_runner` (it needs this module);
    it is still importable from here."""
    if name == "OperationRunner":
        from servicekit.operation_runner import OperationRunner

        return OperationRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
