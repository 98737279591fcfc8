"""Runtime services: one aggregate per started instance of a configured service (reference §3.2
as changed by DECISIONS 7 and 8).

``starting`` (its port reserved from this moment, before the bind) → ``running`` (ready) |
``failed`` (the start failed: spawn error, early exit, readiness timeout); ``running`` →
``stopped`` (stopped, or exited with status 0 or by SIGTERM) | ``failed`` (any other end). Once
ended, an instance never changes status again: a late second report of its end (the watcher and
a stop racing) is ignored. Leases are the runs holding it (reference §6.6-§6.7).
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from eventsourcing.domain import event

from runtime_supervisor.domain.service_base import AboutStamped
from runtime_supervisor.domain.service_record import (
    HEALTH_STATUSES,
    LIVE_STATUSES,
    ServiceRecord,
    StoredStopPolicy,
    record_of,
    tail_text,
)

__all__ = ["RuntimeService"]


class RuntimeService(AboutStamped):
    """One started instance of a runtime service (see the module's docstring)."""

    node_id: str | None = None
    """The worker node whose supervisor started it (None: before worker nodes)."""

    @staticmethod
    def create_id(service_id: str) -> UUID:
        """The id is chosen before the start, so the run directory can be named after it."""
        return UUID(service_id)

    @event("StartBegan")
    def __init__(
        self,
        *,
        service_id: str,
        company_id: str,
        target_key: str,
        execution_workspace_id: str | None,
        project_workspace_id: str | None,
        service_name: str,
        workspace_command_id: str | None,
        service_index: int | None,
        command: str,
        cwd: str,
        port: int | None,
        url: str | None,
        lifecycle: str,
        scope_type: str | None,
        scope_id: str | None,
        reuse_key: str | None,
        stop_policy: StoredStopPolicy | None,
        run_dir: str | None,
        started_by_run_id: str | None,
        owner_agent_id: str | None,
        lease_run_ids: list[str],
        at: datetime,
        node_id: str | None = None,
    ) -> None:
        self.company_id = company_id
        self.node_id = node_id
        self.target_key = target_key
        self.execution_workspace_id = execution_workspace_id
        self.project_workspace_id = project_workspace_id
        self.service_name, self.workspace_command_id = service_name, workspace_command_id
        self.service_index, self.command, self.cwd = service_index, command, cwd
        self.port, self.url, self.lifecycle = port, url, lifecycle
        self.scope_type, self.scope_id, self.reuse_key = scope_type, scope_id, reuse_key
        self.stop_policy = stop_policy.copy() if stop_policy is not None else None
        self.run_dir = run_dir
        self.started_by_run_id, self.owner_agent_id = started_by_run_id, owner_agent_id
        self.lease_run_ids = list(lease_run_ids)
        self.status, self.health_status = "starting", "unknown"
        self.pid: int | None = None
        self.pgid: int | None = None
        self.process_start_time: int | None = None
        self.wrapper_start_time: int | None = None
        self.started_at: datetime | None = None
        self.stopped_at: datetime | None = None
        self.adopted_at: datetime | None = None
        self.created_at = at
        self.last_used_at: datetime | None = at
        self.stop_reason: str | None = None
        self.exit_code: int | None = None
        self.exit_signal: int | None = None
        self.last_error: str | None = None
        self.last_output: str | None = None

    @property
    def live(self) -> bool:
        """``starting`` or ``running``."""
        return self.status in LIVE_STATUSES

    # -- the process -----------------------------------------------------------------------

    def spawn(
        self,
        *,
        pid: int,
        pgid: int,
        process_start_time: int | None,
        run_dir: str | None,
        wrapper_start_time: int | None = None,
    ) -> bool:
        """The process started (readiness not known yet); False when no longer ``starting``."""
        if self.status != "starting":
            return False
        self._spawned(
            pid=pid,
            pgid=pgid,
            process_start_time=process_start_time,
            run_dir=run_dir,
            wrapper_start_time=wrapper_start_time,
        )
        return True

    @event("Spawned")
    def _spawned(
        self,
        pid: int,
        pgid: int,
        process_start_time: int | None,
        run_dir: str | None,
        wrapper_start_time: int | None = None,  # added later: older stored events lack it
    ) -> None:
        self.pid, self.pgid, self.process_start_time = pid, pgid, process_start_time
        self.run_dir = run_dir or self.run_dir
        self.wrapper_start_time = wrapper_start_time

    def run(
        self,
        at: datetime,
        *,
        url: str | None,
        pid: int | None,
        pgid: int | None,
        process_start_time: int | None,
    ) -> bool:
        """Readiness passed: ``running`` and ``healthy``; False when no longer ``starting``."""
        if self.status != "starting":
            return False
        self._started(
            at=at,
            url=url if url is not None else self.url,
            pid=pid if pid is not None else self.pid,
            pgid=pgid if pgid is not None else self.pgid,
            process_start_time=(
                process_start_time if process_start_time is not None else self.process_start_time
            ),
        )
        return True

    @event("Started")
    def _started(
        self,
        at: datetime,
        url: str | None,
        pid: int | None,
        pgid: int | None,
        process_start_time: int | None,
    ) -> None:
        self.status, self.health_status = "running", "healthy"
        self.url, self.pid, self.pgid = url, pid, pgid
        self.process_start_time = process_start_time
        self.started_at = self.last_used_at = at

    def fail_start(
        self,
        at: datetime,
        *,
        error: str,
        exit_code: int | None,
        exit_signal: int | None,
        last_output: str | None,
    ) -> bool:
        """The start failed before readiness: ``failed`` (DECISIONS 8, case 57); False when no
        longer ``starting``."""
        if self.status != "starting":
            return False
        self._start_failed(
            at=at,
            error=error,
            exit_code=exit_code,
            exit_signal=exit_signal,
            last_output=tail_text(last_output),
        )
        return True

    @event("StartFailed")
    def _start_failed(
        self,
        at: datetime,
        error: str,
        exit_code: int | None,
        exit_signal: int | None,
        last_output: str | None,
    ) -> None:
        self.status, self.health_status = "failed", "unhealthy"
        self.last_error, self.last_output = error, last_output
        self.exit_code, self.exit_signal = exit_code, exit_signal
        self.stopped_at = at

    def stop(
        self,
        at: datetime,
        *,
        stop_reason: str,
        exit_code: int | None,
        exit_signal: int | None,
        last_output: str | None = None,
    ) -> bool:
        """Stopped, or ended by itself with status 0 or SIGTERM; False when already ended."""
        if not self.live:
            return False
        self._stopped(
            at=at,
            stop_reason=stop_reason,
            exit_code=exit_code,
            exit_signal=exit_signal,
            last_output=tail_text(last_output),
        )
        return True

    @event("Stopped")
    def _stopped(
        self,
        at: datetime,
        stop_reason: str,
        exit_code: int | None,
        exit_signal: int | None,
        last_output: str | None,
    ) -> None:
        self.status, self.health_status = "stopped", "unknown"
        self.stop_reason, self.exit_code, self.exit_signal = stop_reason, exit_code, exit_signal
        self.last_output = last_output if last_output is not None else self.last_output
        self.stopped_at = at

    def fail(
        self,
        at: datetime,
        *,
        error: str | None,
        exit_code: int | None,
        exit_signal: int | None,
        last_output: str | None,
    ) -> bool:
        """Ended by itself otherwise (SIGKILL from outside included); False when already ended."""
        if not self.live:
            return False
        self._failed(
            at=at,
            error=error,
            exit_code=exit_code,
            exit_signal=exit_signal,
            last_output=tail_text(last_output),
        )
        return True

    @event("Failed")
    def _failed(
        self,
        at: datetime,
        error: str | None,
        exit_code: int | None,
        exit_signal: int | None,
        last_output: str | None,
    ) -> None:
        self.status, self.health_status = "failed", "unhealthy"
        self.last_error, self.last_output = error, last_output
        self.exit_code, self.exit_signal = exit_code, exit_signal
        self.stopped_at = at

    def adopt(self, at: datetime, *, pid: int | None) -> bool:
        """A restarted supervisor found the process alive and supervises it again (DECISIONS 7):
        ``running`` without a restart; False when already ended."""
        if not self.live:
            return False
        self._adopted(at=at, pid=pid if pid is not None else self.pid)
        return True

    @event("Adopted")
    def _adopted(self, at: datetime, pid: int | None) -> None:
        self.status, self.pid, self.adopted_at = "running", pid, at
        self.started_at = self.started_at or at

    # -- health, leases, use ---------------------------------------------------------------

    def change_health(self, health_status: str) -> bool:
        """A probe's verdict; False when unchanged."""
        if health_status not in HEALTH_STATUSES:
            raise ValueError(f"health must be one of {', '.join(HEALTH_STATUSES)}")
        if health_status == self.health_status:
            return False
        self._health_changed(health_status=health_status, previous=self.health_status)
        return True

    @event("HealthChanged")
    def _health_changed(self, health_status: str, previous: str) -> None:
        self.health_status = health_status

    def acquire(self, lease_run_id: str, at: datetime) -> bool:
        """The run holds the service (and used it now); False when it already did."""
        if lease_run_id in self.lease_run_ids:
            return False
        self._lease_acquired(
            lease_run_id=lease_run_id, lease_run_ids=[*self.lease_run_ids, lease_run_id], at=at
        )
        return True

    @event("LeaseAcquired")
    def _lease_acquired(self, lease_run_id: str, lease_run_ids: list[str], at: datetime) -> None:
        self.lease_run_ids = list(lease_run_ids)
        self.last_used_at = at

    def release(self, lease_run_id: str, at: datetime) -> bool:
        """The run no longer holds the service; False when it did not."""
        if lease_run_id not in self.lease_run_ids:
            return False
        remaining = [r for r in self.lease_run_ids if r != lease_run_id]
        self._lease_released(lease_run_id=lease_run_id, lease_run_ids=remaining, at=at)
        return True

    @event("LeaseReleased")
    def _lease_released(self, lease_run_id: str, lease_run_ids: list[str], at: datetime) -> None:
        self.lease_run_ids = list(lease_run_ids)
        self.last_used_at = at

    @event("Touched")
    def touch(self, at: datetime) -> None:
        """The service was used now (``lastUsedAt``; idle stops count from it)."""
        self.last_used_at = at

    def record(self) -> ServiceRecord:
        """An immutable copy of the instance."""
        return record_of(self)
