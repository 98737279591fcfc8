"""Use cases of runtime service instances' leases (reference §6.6, §6.7): which run may hold
one, a run acquiring or releasing one, and a run's end releasing all it holds."""

from __future__ import annotations

from typing import Any

from runtime_supervisor.domain import (
    NotFoundError,
    RuntimeService,
    ServiceRecord,
    StateConflictError,
)
from runtime_supervisor.domain.leases import TERMINAL_RUN_STATUSES
from runtime_supervisor.usecases.queries import Queries

__all__ = ["Release", "ServiceLeaseUseCases"]

Release = tuple[ServiceRecord, bool]
"""A released lease: the instance after the release, and whether no run holds it any more."""


class ServiceLeaseUseCases(Queries):
    """Record which runs hold runtime service instances."""

    def check_lease_run(self, company_id: str | None, run_id: str) -> None:
        """Whether ``run_id`` may hold a lease: not a run the copies say has finished (no lease
        outlives its run) nor another company's. A run the copies do not know yet may: its
        ``run.started`` may still be on its way, and its ``run.finished`` releases what it holds.

        Raises:
            StateConflictError: The run has finished.
            NotFoundError: The run is another company's.
        """
        run = self.copy_of("run", run_id)
        if run is None:
            return
        if company_id is not None and run.company_id and run.company_id != company_id:
            raise NotFoundError(f"There is no run {run_id}.", runId=run_id)
        status = run.get("status")
        if status in TERMINAL_RUN_STATUSES:
            raise StateConflictError(
                f"The run {run_id} has finished ({status}); a finished run holds no runtime "
                "services.",
                runId=run_id,
                runStatus=status,
            )

    def acquire_lease(self, service_id: str, run_id: str) -> ServiceRecord:
        """The run holds the instance (reference §6.6); a second acquisition changes nothing.

        Raises:
            StateConflictError: The instance has ended, or the run has.
            NotFoundError: The run is another company's.
        """
        at = self.now()
        current = self.service_record(None, service_id)
        if not current.live:
            raise StateConflictError(
                f"The runtime service {service_id} is {current.status}; it cannot be leased.",
                runtimeServiceId=service_id,
            )
        self.check_lease_run(current.company_id, run_id)
        return self._change(service_id, lambda s: s.acquire(run_id, at))

    def release_lease(self, service_id: str, run_id: str) -> Release:
        """The run no longer holds the instance; returns it and whether no run holds it now."""
        at = self.now()
        record = self._change(service_id, lambda s: s.release(run_id, at))
        return record, not record.lease_run_ids

    def release_run(self, run_id: str) -> list[Release]:
        """Release every lease the run holds (reference §6.7), in one save.

        Returns:
            For each instance the run held: the instance after the release, and whether no run
            holds it any more (the orchestration then stops an ephemeral or ``on_run_finish``
            one, or arms the ``idle_timeout`` timer).
        """
        released = self._released(run_id)
        if released:
            self.save(*released)
        return [(self.services[str(s.id)].record(), not s.lease_run_ids) for s in released]

    def _released(self, run_id: str) -> list[RuntimeService]:
        """The instances the run held, loaded and released (not saved yet)."""
        at = self.now()
        released = []
        for service_id in sorted(self.services_by_run.get(run_id, ())):
            service: RuntimeService = self.load(service_id)
            if service.release(run_id, at):
                released.append(service)
        return released

    def _change(self, service_id: str, change: Any) -> ServiceRecord:
        if service_id not in self.services:
            raise NotFoundError(
                f"There is no runtime service {service_id}.", runtimeServiceId=service_id
            )
        service: RuntimeService = self.load(service_id)
        change(service)
        if service.pending_events:
            self.save(service)
        return self.services[service_id].record()
