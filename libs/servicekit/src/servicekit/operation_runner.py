"""Running long work as operations: answered in time, or ``accepted`` and polled.

:class:`OperationRunner` is the half of :mod:`servicekit.operations` that runs: it starts an
``Operation`` acting as the request's principal, runs the work in a task, answers with the result
when it ends before the request's deadline (else ``Accepted``), records how it ended, answers
``GetOperation`` within the access model, and, on the instance holding the service's lease, fails
the operations a stopped or crashed instance cut short (:func:`sweep_operations`).
"""

# mypy: disable-error-code=attr-defined
# (``Operation.Started`` and its siblings are made by eventsourcing's ``@event``; see operations)

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import Tracking

from contracts.base import Accepted
from eventstore import Cause, UnpublishableEventError, acting, current_cause, system_cause
from servicekit.access import Access, Action, Reach, Resource, reach_of
from servicekit.operations import (
    OPERATIONS_CHECKED,
    Operation,
    OperationError,
    RunningOperation,
    failure_details,
    running_since,
)

if TYPE_CHECKING:
    from contracts.base import Principal
    from contracts.service import OperationView
    from eventstore import ServiceApplication, StoreExecutor
    from natsbus import RequestContext
    from servicekit.instances import InstanceDirectory

__all__ = ["REPLY_MARGIN", "OperationRunner", "sweep_operations"]

log = logging.getLogger(__name__)
T = TypeVar("T")

REPLY_MARGIN = 0.5
"""Seconds kept before the request's deadline to send the reply."""

SWEEP_EVERY = 60.0
"""Seconds between two sweeps for operations of instances that stopped."""

SWEEP_CONFIRM = 10.0
"""Seconds between the first sweep (at the grant) and the second, which fails the operations of
instances missing from both."""


class OperationRunner:
    """Runs long work as operations of one service; answers ``GetOperation`` from the store."""

    def __init__(
        self,
        app: ServiceApplication,
        executor: StoreExecutor,
        *,
        service: str,
        instance: str | None = None,
    ) -> None:
        self.app = app
        self.executor = executor
        self.service = service
        self.instance = instance
        """The process running the operations (its micro id), stamped on each; None: unknown."""
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

    def fail_interrupted(self, live: Collection[str] = (), spared: Collection[str] = ()) -> int:
        """Record every operation left ``running`` by a stopped or crashed instance as failed
        (store thread; the leader runs it through :func:`sweep_operations`).

        Only operation events saved after the previous sweep's position are read. Operations of
        the ``live`` instances (their micro ids), and of those ``spared`` this round, are left
        running; the position recorded stops before the first of them, so the next sweep reads
        them again. Operations stamped with no instance (stored before replicas) are failed.

        Returns:
            How many operations were failed.
        """
        return self._fail_stranded(self._running(), live, spared)

    def sweep_once(self, live: set[str], missing_before: set[str]) -> tuple[int, set[str]]:
        """One sweep round in one store call and one scan: the instances of the running
        operations missing from ``live`` now but not in the round before are spared (looked at
        again next round); the others' operations are failed. Returns how many failed and who
        was spared."""
        scan = self._running()
        missing = {op.instance for op in scan[1] if op.instance is not None} - live
        spared = missing - missing_before
        return self._fail_stranded(scan, live, spared), spared

    def _running(self) -> tuple[int, list[RunningOperation], int]:
        """The last sweep's position, the operations running since, and the last id read."""
        checked = self.app.recorder.max_tracking_id(OPERATIONS_CHECKED) or 0
        running, upto = running_since(self.app, checked)
        return checked, running, upto

    def _fail_stranded(
        self,
        scan: tuple[int, list[RunningOperation], int],
        live: Collection[str],
        spared: Collection[str],
    ) -> int:
        checked, running, upto = scan
        kept = [op for op in running if op.instance is not None and op.instance in {*live, *spared}]
        stranded = [op for op in running if op not in kept]
        with acting(system_cause(self.service, "service restarted while the work was running")):
            for stranded_op in stranded:
                operation: Operation = self.app.repository.get(stranded_op.id)
                if operation.status != "running":  # finished since the scan
                    continue
                operation.fail(
                    OperationError("interrupted", "the service stopped mid-work").stored(),
                    operation.kind,
                    operation.company_id,
                )
                saved = self.app.save(operation)
                upto = max(upto, saved[-1].notification.id)  # its own saves: read, in effect
        upto = kept[0].notification_id - 1 if kept else upto
        if upto > checked:
            self.app.save_with_tracking(tracking=Tracking(OPERATIONS_CHECKED, upto))
        return len(stranded)

    async def _run(self, operation_id: str, work: Callable[[str], Awaitable[T]]) -> T:
        try:
            result = await work(operation_id)
        except asyncio.CancelledError:
            await self.executor.run(
                self._finish, operation_id, None, OperationError("cancelled", "stopped")
            )
            raise
        except Exception as error:
            details = failure_details(error, operation_id)
            if details.code == "internal":
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
            operation = Operation(
                kind=kind, company_id=company_id, subject_id=subject_id, instance=self.instance
            )
        self.app.save(operation)
        return str(operation.id)

    def _finish(self, operation_id: str, result: Any, error: OperationError | None) -> None:
        operation: Operation = self.app.repository.get(uuid.UUID(operation_id))
        if operation.status != "running":  # failed by a sweep that took this instance for gone
            log.warning(
                "operation %s already %s; its end is not recorded", operation_id, operation.status
            )
            return
        if error is None:
            operation.succeed(result, operation.kind, operation.company_id)
        else:
            operation.fail(error.stored(), operation.kind, operation.company_id)
        self.app.save(operation)

    def _view(self, operation_id: str, principal: Principal) -> OperationView | None:
        try:
            operation: object = self.app.repository.get(uuid.UUID(operation_id))
        except (ValueError, AggregateNotFoundError):
            return None
        if not isinstance(operation, Operation) or not _may_see(Access.of(principal), operation):
            return None
        return operation.view()


async def sweep_operations(
    runner: OperationRunner, instances: InstanceDirectory, *, every: float = SWEEP_EVERY
) -> None:
    """The leader's sweep (run as a task while the service's lease is held): fail the
    operations of instances gone from the bus. An instance is gone when it was missing from two
    rounds in a row (at the grant, :data:`SWEEP_CONFIRM` seconds later, then every ``every``
    seconds): one starting up (serving before it answers pings) or stopping (silent, its last
    handlers still running) is not failed on one look. Operations stamped with no instance
    (stored before replicas) are failed at the grant. A round in which this instance does not
    hear itself (the bus is down) fails nothing; a failed round is logged, the next one tries."""
    missing: set[str] = set()
    wait = SWEEP_CONFIRM
    while True:
        try:
            missing = await _sweep_round(runner, instances, missing)
        except Exception:
            log.exception("operations sweep round failed", extra={"service": runner.service})
            missing = set()
        await asyncio.sleep(wait)
        wait = every


async def _sweep_round(
    runner: OperationRunner, instances: InstanceDirectory, missing_before: set[str]
) -> set[str]:
    live = await instances.live_micro_ids()
    if runner.instance is not None and runner.instance not in live:
        return set()  # this instance does not hear itself: the bus cannot tell who is gone
    failed, spared = await runner.executor.run(runner.sweep_once, live, missing_before)
    if failed:
        log.warning(
            "operations cut short by a stopped instance failed",
            extra={"service": runner.service, "count": failed},
        )
    return spared


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


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a finished task's exception as seen (it is recorded on the operation)."""
    if not task.cancelled():
        task.exception()
