"""Long work as operations (ARCHITECTURE §2): answered in time, or ``accepted`` and polled.

A service that runs long work (a clone, a realize, a service start with readiness) runs it through
:class:`OperationRunner`. The work becomes an ``Operation`` aggregate in the service's own store;
if it ends before the request's deadline the caller gets the result at once, otherwise an
``Accepted {operationId}`` reply, and ``GET /api/operations/{id}`` later shows the same result.
Operations still ``running`` when a service starts were cut short by a stop or crash: they are
recorded as failed, so no one polls forever.
"""

# The event classes ``Operation.Started``, ``Operation.Succeeded`` and ``Operation.Failed`` are made
# at class creation by eventsourcing's ``@event`` decorator, so mypy cannot see them (nor their
# fields); ``attr-defined`` is off for this module for that reason only.
# mypy: disable-error-code=attr-defined

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import event

from contracts.base import Accepted
from contracts.service import OperationFinished, OperationStarted, OperationView
from eventstore import ClipyardAggregate, acting, system_cause
from servicekit.publishing import envelope

if TYPE_CHECKING:
    from eventstore import ServiceApplication, StoreExecutor
    from natsbus import RequestContext

__all__ = ["Operation", "OperationRunner", "operation_to_contract"]

log = logging.getLogger(__name__)
T = TypeVar("T")

REPLY_MARGIN = 0.5
"""Seconds kept before the request's deadline to send the reply."""


class Operation(ClipyardAggregate):
    """Long work of one service: its kind, status, and result or error."""

    @event("Started")
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
        company_id: str | None = None,
        subject_id: str | None = None,
    ) -> T | Accepted:
        """Start ``work(operation_id)``; its result if it ends in time, else ``Accepted``.

        A failure of the work is recorded on the operation and raised to the caller when it
        happens in time, so the caller gets the same error reply it would without operations.
        """
        operation_id = await self.executor.run(self._start, kind, company_id, subject_id)
        task = asyncio.create_task(self._run(operation_id, work), name=f"operation-{kind}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        budget = max(ctx.deadline - time.time() - REPLY_MARGIN, 0.0)
        done, _ = await asyncio.wait({task}, timeout=budget)
        if task in done:
            return task.result()
        return Accepted(operation_id=operation_id)

    async def get(self, operation_id: str) -> OperationView | None:
        """The operation, or None if this service has none with that id."""
        return await self.executor.run(self._view, operation_id)

    async def stop(self, timeout: float = 2.0) -> None:
        """Give running work ``timeout`` seconds, then cancel it (recorded as failed)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=1.0)

    def fail_interrupted(self) -> int:
        """Record every operation left ``running`` by a stop or crash as failed (store thread)."""
        ids = [op_id for op_id, status in _running_ids(self.app) if status == "running"]
        with acting(system_cause(self.service, "service restarted while the work was running")):
            for op_id in ids:
                operation: Operation = self.app.repository.get(op_id)
                operation.fail(
                    {"code": "interrupted", "message": "the service stopped mid-work"},
                    operation.kind,
                    operation.company_id,
                )
                self.app.save(operation)
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
            details = {
                "code": getattr(error, "code", "internal"),
                "message": str(error) if hasattr(error, "code") else "the work failed",
            }
            await self.executor.run(self._finish, operation_id, None, details)
            raise
        await self.executor.run(self._finish, operation_id, msgspec.to_builtins(result), None)
        return result

    def _start(self, kind: str, company_id: str | None, subject_id: str | None) -> str:
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

    def _view(self, operation_id: str) -> OperationView | None:
        try:
            operation: object = self.app.repository.get(uuid.UUID(operation_id))
        except (ValueError, AggregateNotFoundError):
            return None
        if not isinstance(operation, Operation):
            return None
        return operation.view()


def _running_ids(app: ServiceApplication) -> list[tuple[uuid.UUID, str]]:
    states: dict[uuid.UUID, str] = {}
    for notification in app.recorder.select_notifications(start=None, limit=10**9):
        domain_event = app.mapper.to_domain_event(notification)
        if isinstance(domain_event, Operation.Started):
            states[domain_event.originator_id] = "running"
        elif isinstance(domain_event, Operation.Succeeded | Operation.Failed):
            states[domain_event.originator_id] = "finished"
    return list(states.items())
