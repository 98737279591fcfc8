"""What every use case of the controller shares: the cause it acts under (with the run a
principal names checked), loading aggregates, saving events in order, and the two steps several
use cases take (a wake, a run's end)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid4

import msgspec

from contracts.agents import WakeAccepted
from contracts.base import Actor, Principal
from eventstore import Cause, acting, current_cause, system_cause
from heartbeat_controller.domain import Agent, NotFoundError, Run, WakeupRequest
from heartbeat_controller.readmodels import HeartbeatReadModels, idempotency_key, target_key
from heartbeat_controller.settings import SERVICE_NAME
from servicekit.access import Access, AccessDeniedError

if TYPE_CHECKING:
    from eventsourcing.domain import DomainEventProtocol
    from eventsourcing.persistence import Tracking
    from eventsourcing.utils import EnvType

    from heartbeat_controller.domain.records import ActorRecord, JsonObject

__all__ = ["UseCaseBase", "cause_of"]


def cause_of(principal: Principal, reason: str) -> Cause:
    """The cause of a change asked for by ``principal``, as it is: its ``run_id`` unchecked.
    Use cases act under :meth:`UseCaseBase._acting_for`, which checks that run first."""
    return Cause(
        actor=principal.actor,
        run_id=principal.run_id,
        reason=reason,
        company_id=principal.company_id,
    )


class UseCaseBase(HeartbeatReadModels):
    """The read models plus the helpers of the use cases."""

    def __init__(self, env: EnvType | None = None, *, service: str | None = None) -> None:
        """Open the store and rebuild the read models (see ``ServiceApplication``)."""
        self.on_workspace_handed: list[Callable[[list[str]], None]] = []
        """Called on the store thread after a save that handed a workspace's run lease to
        waiting runs (their ids): a finish (also returned by ``finish_run``), a queued run's
        cancel, an agent's delete, a run moving to another workspace (``lease_workspace``)."""
        super().__init__(env, service=service)

    # -- helpers -------------------------------------------------------------------------------

    def _acting_for(self, principal: Principal, reason: str) -> AbstractContextManager[Any]:
        """Act under the cause of ``principal``'s request, once the run it names is checked
        (:meth:`_check_acting_run`). Every command that records a cause from a principal goes
        through here, before anything is changed or saved."""
        self._check_acting_run(principal)
        return acting(cause_of(principal, reason))

    def _check_acting_run(self, principal: Principal) -> None:
        """Check the run a principal acts for (``X-Run-Id``, alias ``X-Paperclip-Run-Id``),
        which the cause records as the change's run.

        The gateway puts the header into ``principal.run_id`` for any key and checks only that a
        run token names its own run; the controller owns runs, so it checks every other key: the
        run must be one of the principal's company and, for an agent key, a run of its agent.
        A run token's run is its own (checked by the gateway) and is left as it is.

        Raises:
            NotFoundError: No such run in the principal's company (404, ``details.field``
                ``X-Run-Id``).
            AccessDeniedError: An agent key naming a run of another agent (403).
        """
        run_id = principal.run_id
        access = Access.of(principal)
        if run_id is None or access.is_run_token:
            return
        run = self.runs.get(run_id)
        if run is None or not access.sees_company(run.company_id):
            raise NotFoundError(
                f"X-Run-Id: there is no run {run_id} in this key's company; name one of its "
                "runs in X-Run-Id (or X-Paperclip-Run-Id), or leave the header out.",
                runId=run_id,
                field="X-Run-Id",
            )
        try:
            access.check_run(run_id, run.agent_id, "act for")
        except AccessDeniedError as denied:
            denied.details["field"] = "X-Run-Id"
            raise

    def _system(self, reason: str, run_id: str | None = None) -> AbstractContextManager[Any]:
        """The current cause, else Clipyard itself acting for ``run_id``."""
        if current_cause() is not None:
            return nullcontext()
        return acting(system_cause(SERVICE_NAME, reason, run_id=run_id))

    def _load_run(self, run_id: str) -> Run:
        if run_id not in self.runs:
            raise NotFoundError(f"There is no run {run_id}.", runId=run_id)
        run: Run = self.repository.get(UUID(run_id))
        return run

    def _load(self, ident: str) -> Any:
        return self.repository.get(UUID(ident))

    def _save_events(
        self, events: list[DomainEventProtocol[UUID]], tracking: Tracking | None
    ) -> None:
        if tracking is not None:
            self.save_with_tracking(*events, tracking=tracking)
        elif events:
            self.save(*events)

    def _handed(self, run_ids: list[str]) -> None:
        if not run_ids:
            return
        for callback in list(self.on_workspace_handed):
            callback(list(run_ids))

    def _hand_over(self, workspace_id: str, at: datetime) -> tuple[list[str], list[Any]]:
        """Give ``workspace_id``'s run lease to the first run waiting for it, if any."""
        for waiter_id in self.workspace_waiters.get(workspace_id, []):
            waiter = self._load_run(waiter_id)
            if waiter.finished or waiter.waiting_for != workspace_id:
                continue
            with self._system("workspace handed over", waiter_id):
                waiter.lease(workspace_id, at)
            return [waiter_id], list(waiter.collect_events())
        return [], []

    def _wake(
        self,
        agent: Agent,
        *,
        source: str,
        reason: str | None,
        issue_id: str | None,
        payload: JsonObject | None,
        key: str | None,
        requested_by: Actor | None,
        at: datetime,
    ) -> tuple[WakeAccepted, list[Any]]:
        """The wake's answer and the aggregates to save (none for a repeated key: the first
        wake's answer, ``queued`` or ``coalesced`` as it was then, whatever its run did since)."""
        agent_id = str(agent.id)
        if key is not None:
            first = self.idempotency.get(idempotency_key(agent_id, key))
            if first is not None:
                seen = self.wakeups[first]
                accepted = WakeAccepted(
                    run_id=seen.queued_run_id,
                    wakeup_request_id=first,
                    status=seen.accepted_as,  # type: ignore[arg-type]
                )
                return accepted, []
        queued_run = self.queued_by_target.get(target_key(agent_id, issue_id))
        wakeup_id, run_id = uuid4(), UUID(queued_run) if queued_run else uuid4()
        status = "coalesced" if queued_run else "queued"
        requester: ActorRecord | None = msgspec.to_builtins(requested_by) if requested_by else None
        wakeup = WakeupRequest.request(
            wakeup_id,
            company_id=agent.company_id,
            agent_id=agent_id,
            source=source,
            wake_reason=reason,
            issue_id=issue_id,
            payload=payload,
            idempotency_key=key,
            requested_by=requester,
            status=status,
            queued_run_id=str(run_id),
            at=at,
        )
        if queued_run:
            run = self._load_run(queued_run)
            run.join(str(wakeup_id), at)
        else:
            run = Run.queue(
                run_id,
                company_id=agent.company_id,
                agent_id=agent_id,
                issue_id=issue_id,
                wakeup_request_id=str(wakeup_id),
                source=source,
                wake_reason=reason,
                payload=payload,
                at=at,
            )
        accepted = WakeAccepted(run_id=str(run_id), wakeup_request_id=str(wakeup_id), status=status)  # type: ignore[arg-type]
        return accepted, [wakeup, run]

    def _finish_events(
        self, run: Run, status: str, error_code: str | None, error: str | None, at: datetime
    ) -> tuple[list[Any], list[str]]:
        """The events ending ``run`` in order (``Finished`` last), and the runs handed its
        workspace."""
        run.change_stage("cleanup", None, at)
        released = run.release(at)
        events: list[Any] = list(run.collect_events())
        handed: list[str] = []
        if released is not None:
            handed, more = self._hand_over(released, at)
            events += more
        for wakeup_id in run.wakeup_ids:
            wakeup: WakeupRequest = self._load(wakeup_id)
            wakeup.close(status, error, at)
            events += wakeup.collect_events()
        run.finish(status, error_code, error, at)
        events += run.collect_events()
        return events, handed
