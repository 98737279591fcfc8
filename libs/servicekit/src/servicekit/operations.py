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

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import event
from eventsourcing.persistence import Tracking
from eventsourcing.utils import get_topic

from contracts.base import Accepted
from contracts.service import OperationFinished, OperationStarted, OperationView
from eventstore import (
    Cause,
    ClipyardAggregate,
    UnpublishableEventError,
    acting,
    current_cause,
    envelope,
    system_cause,
)
from servicekit.access import Access, Action, Reach, Resource, reach_of

if TYPE_CHECKING:
    from contracts.base import Principal
    from eventstore import ServiceApplication, StoreExecutor
    from natsbus import RequestContext

__all__ = [
    "OPERATIONS_CHECKED",
    "Operation",
    "OperationRunner",
    "failure_details",
    "operation_to_contract",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

REPLY_MARGIN = 0.5
"""Seconds kept before the request's deadline to send the reply."""

OPERATIONS_CHECKED: Final = "clipyard.operations"
"""Tracking name: the last notification a start has looked at for operations left running."""

_SCAN_BATCH: Final = 500


class Operation(ClipyardAggregate):
    """Long work of one service: its kind, status, and result or error.

    ``started_by`` and ``started_run_id`` are the ``actor`` and ``run_id`` stamped on its
    ``Started`` event (who started it, for which run), so stored operations replay as they were.
    """

    started_by: dict[str, Any] | None = None
    """Who started the operation (``{"type", "id"}``), from its ``Started`` event."""
    started_run_id: str | None = None
    """The run it was started for, from its ``Started`` event."""

    class Started(ClipyardAggregate.Created):
        """The operation started; its cause (actor, run) says who started it."""

        kind: str
        company_id: str | None
        subject_id: str | None

        def apply(self, aggregate: Any) -> None:
            """Keep who started the operation, and for which run, on the aggregate."""
            aggregate.started_by = self.actor
            aggregate.started_run_id = self.run_id

    @event(Started)
    def __init__(self, kind: str, company_id: str | None, subject_id: str | None) -> None:
        self.kind = kind
        self.company_id = company_id
        self.subject_id = subject_id
        self.status = "running"
        self.result: Any = None
        self.error: dict[str, Any] | None = None
        self.workspace_operation_ids: list[str] = []
        self.finished_at: datetime | None = None

    @event("Succeeded")
    def succeed(self, result: Any, kind: str, company_id: str | None) -> None:
        self.status = "succeeded"
        self.result = result
        self.finished_at = self.modified_on

    @event("Failed")
    def fail(self, error: dict[str, Any], kind: str, company_id: str | None) -> None:
        self.status = "failed"
        self.error = error
        self.finished_at = self.modified_on

    def view(self) -> OperationView:
        """The operation as the API shows it."""
        return OperationView(
            id=str(self.id),
            kind=self.kind,
            status=self.status,  # type: ignore[arg-type]
            result=self.result,
            error=self.error,
            workspace_operation_ids=list(self.workspace_operation_ids),
            started_at=self.created_on,
            finished_at=self.finished_at,
        )


def operation_to_contract(domain_event: Any, *, service: str) -> Any:
    """The public event for a stored ``Operation`` event, or None if it is not one."""
    if not isinstance(domain_event, Operation.Started | Operation.Succeeded | Operation.Failed):
        return None
    fields = envelope(
        domain_event, aggregate="operation", company_id=domain_event.company_id, service=service
    )
    if isinstance(domain_event, Operation.Started):
        return OperationStarted(**fields, kind=domain_event.kind)
    return OperationFinished(
        **fields,
        kind=domain_event.kind,
        status="succeeded" if isinstance(domain_event, Operation.Succeeded) else "failed",
        result=getattr(domain_event, "result", None),
        error=getattr(domain_event, "error", None),
    )


class OperationRunner:
    """Runs long work as operations of one service; answers ``GetOperation`` from the store."""

    def __init__(self, app: ServiceApplication, executor: StoreExecutor, *, service: str) -> None:
        self.app = app
        self.executor = executor
        self.service = service
        self._tasks: set[asyncio.Task[Any]] = set()

    async def run(
        self,
        kind: str,
        work: Callable[[str], Awaitable[T]],
        *,
        ctx: RequestContext,
        principal: Principal,
        company_id: str | None = None,
        subject_id: str | None = None,
    ) -> T | Accepted:
        """Start ``work(operation_id)``; its result if it ends in time, else ``Accepted``.

        The operation is created acting as ``principal`` (its actor and run are stamped on the
        ``Started`` event): that is who may see it later besides the board and operators.
        A failure of the work is recorded on the operation and raised to the caller when it
        happens in time, so the caller gets the same error reply it would without operations.
        """
        cause = _started_by(principal, kind)
        operation_id = await self.executor.run(self._start, cause, kind, company_id, subject_id)
        task = asyncio.create_task(self._run(operation_id, work), name=f"operation-{kind}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        # Nobody awaits the task once the caller got ``Accepted``: its failure is already
        # recorded on the operation (and logged), so retrieve it here.
        task.add_done_callback(_retrieve)
        budget = max(ctx.deadline - time.time() - REPLY_MARGIN, 0.0)
        done, _ = await asyncio.wait({task}, timeout=budget)
        if task in done:
            return task.result()
        return Accepted(operation_id=operation_id)

    async def get(self, operation_id: str, principal: Principal) -> OperationView | None:
        """The operation, or None if this service has none with that id ``principal`` may see.

        Args:
            operation_id: The operation's id.
            principal: Who asks: an admin or Clipyard itself sees every operation, a board its
                company's, an agent key those its agent started, a run token those its run
                started (any other is "not found").

        Returns:
            The operation's view, or None.
        """
        return await self.executor.run(self._view, operation_id, principal)

    async def stop(self, timeout: float = 2.0) -> None:
        """Give running work ``timeout`` seconds, then cancel it (recorded as failed)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=1.0)

    def fail_interrupted(self) -> int:
        """Record every operation left ``running`` by a stop or crash as failed (store thread).

        Only operation events saved after the previous start's check are read: any operation
        started before it had finished, or was failed by that start. The check's position is
        recorded once every stranded operation is failed.

        Returns:
            How many operations were failed.
        """
        checked = self.app.recorder.max_tracking_id(OPERATIONS_CHECKED) or 0
        ids = _running_since(self.app, checked)
        with acting(system_cause(self.service, "service restarted while the work was running")):
            for op_id in ids:
                operation: Operation = self.app.repository.get(op_id)
                operation.fail(
                    {"code": "interrupted", "message": "the service stopped mid-work"},
                    operation.kind,
                    operation.company_id,
                )
                self.app.save(operation)
        last = self.app.last_notification_id()
        if last > checked:
            self.app.save_with_tracking(tracking=Tracking(OPERATIONS_CHECKED, last))
        return len(ids)

    async def _run(self, operation_id: str, work: Callable[[str], Awaitable[T]]) -> T:
        try:
            result = await work(operation_id)
        except asyncio.CancelledError:
            await self.executor.run(
                self._finish, operation_id, None, {"code": "cancelled", "message": "stopped"}
            )
            raise
        except Exception as error:
            details = failure_details(error, operation_id)
            if details["code"] == "internal":
                log.error(
                    "operation %s failed",
                    operation_id,
                    exc_info=error,
                    extra={"service": self.service, "operation_id": operation_id},
                )
            await self.executor.run(self._finish, operation_id, None, details)
            raise
        try:
            await self.executor.run(self._finish, operation_id, msgspec.to_builtins(result), None)
        except UnpublishableEventError as error:
            # The result cannot travel (over the bus limit): the operation fails with that.
            details = failure_details(error, operation_id)
            log.error("operation %s: its result cannot be recorded: %s", operation_id, error)
            await self.executor.run(self._finish, operation_id, None, details)
            raise
        return result

    def _start(
        self, cause: Cause, kind: str, company_id: str | None, subject_id: str | None
    ) -> str:
        with acting(cause):
            operation = Operation(kind=kind, company_id=company_id, subject_id=subject_id)
        self.app.save(operation)
        return str(operation.id)

    def _finish(self, operation_id: str, result: Any, error: dict[str, Any] | None) -> None:
        operation: Operation = self.app.repository.get(uuid.UUID(operation_id))
        if error is None:
            operation.succeed(result, operation.kind, operation.company_id)
        else:
            operation.fail(error, operation.kind, operation.company_id)
        self.app.save(operation)

    def _view(self, operation_id: str, principal: Principal) -> OperationView | None:
        try:
            operation: object = self.app.repository.get(uuid.UUID(operation_id))
        except (ValueError, AggregateNotFoundError):
            return None
        if not isinstance(operation, Operation) or not _may_see(Access.of(principal), operation):
            return None
        return operation.view()


def _started_by(principal: Principal, kind: str) -> Cause:
    """The cause an operation is started under: ``principal`` (its actor and run), with the
    reason of the cause the caller acts under, else the operation's kind."""
    current = current_cause()
    return Cause(
        actor=principal.actor,
        run_id=principal.run_id,
        reason=(current.reason if current is not None else None) or kind,
        company_id=principal.company_id,
    )


def _may_see(access: Access, operation: Operation) -> bool:
    """Whether ``access`` may read ``operation`` (ARCHITECTURE §5.1): within its reach of
    operations, and for ``own`` reach only one it started."""
    reach = reach_of(access.kind, Resource.OPERATION, Action.READ)
    if reach is None or not access.sees_company(operation.company_id):
        return False
    return reach is not Reach.OWN or access.started(operation.started_by, operation.started_run_id)


def failure_details(error: BaseException, operation_id: str) -> dict[str, Any]:
    """The ``error`` an operation records for a failure of its work.

    Args:
        error: What the work raised.
        operation_id: The operation's id.

    Returns:
        ``{"code", "message"}``: a domain error's own code and message (it was written for the
        client); for anything else ``internal`` and a sentence naming the operation to look up
        in the service's log (where the trace is).
    """
    code = getattr(error, "code", None)
    if isinstance(code, str) and code and code != "internal":
        return {"code": code, "message": str(error) or code}
    return {
        "code": "internal",
        "message": (
            f"The work failed unexpectedly; look for operation {operation_id} in the "
            "service's log for the cause."
        ),
    }


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a finished task's exception as seen (it is recorded on the operation)."""
    if not task.cancelled():
        task.exception()


_TOPICS: Final = tuple(
    get_topic(cls) for cls in (Operation.Started, Operation.Succeeded, Operation.Failed)
)


def _running_since(app: ServiceApplication, checked: int) -> list[uuid.UUID]:
    """Operations started after notification ``checked`` that have not finished (in order)."""
    running: dict[uuid.UUID, None] = {}
    position = checked
    while True:
        notifications = app.recorder.select_notifications(
            start=position, limit=_SCAN_BATCH, topics=_TOPICS, inclusive_of_start=False
        )
        for notification in notifications:
            domain_event = app.mapper.to_domain_event(notification)
            if isinstance(domain_event, Operation.Started):
                running[domain_event.originator_id] = None
            else:
                running.pop(domain_event.originator_id, None)
        if len(notifications) < _SCAN_BATCH:
            return list(running)
        position = notifications[-1].id
