"""Use cases of runtime service instances: the start's record before the bind, its process,
its end, adoption, health, leases and use. The process work happens in the orchestration off the
store thread; these record what it did, each in one save."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import msgspec

from contracts.workspace_config import StopPolicy
from runtime_supervisor.domain import (
    InvalidInputError,
    PortConflictError,
    RuntimeService,
    ServiceRecord,
    StateConflictError,
)
from runtime_supervisor.domain.service_record import StoredStopPolicy
from runtime_supervisor.usecases.queries import owner_label
from runtime_supervisor.usecases.service_leases import Release, ServiceLeaseUseCases

if TYPE_CHECKING:
    from runtime_supervisor.domain import RuntimeTarget

__all__ = ["Release", "ServiceUseCases"]


class ServiceUseCases(ServiceLeaseUseCases):
    """Record what happens to runtime service instances."""

    def begin_start(
        self,
        target: RuntimeTarget,
        *,
        service_name: str,
        command: str,
        cwd: str,
        port: int | None = None,
        url: str | None = None,
        workspace_command_id: str | None = None,
        service_index: int | None = None,
        lifecycle: str = "shared",
        scope_type: str | None = None,
        scope_id: str | None = None,
        reuse_key: str | None = None,
        stop_policy: StoredStopPolicy | StopPolicy | None = None,
        run_dir: str | None = None,
        started_by_run_id: str | None = None,
        owner_agent_id: str | None = None,
        lease_run_ids: tuple[str, ...] = (),
        service_id: str | None = None,
    ) -> str:
        """Record a ``starting`` instance, reserving its port before the bind (DECISIONS 8);
        return its id.

        Args:
            target: Where it runs.
            service_name: Its configured name.
            command: The shell command (never its environment).
            cwd: The resolved working directory.
            port: The port chosen (None: the service has none).
            url: Its URL, when known before the start.
            workspace_command_id: The configured command's id.
            service_index: Its index among the target's configured services.
            lifecycle: ``shared`` or ``ephemeral``.
            scope_type: ``project_workspace | execution_workspace | agent | run``.
            scope_id: The scope's id.
            reuse_key: The reuse key of a shared service.
            stop_policy: ``{type, idleSeconds}`` as configured (or the ``StopPolicy`` value).
            run_dir: Where its wrapper writes (``$CLIPYARD_HOME/runtime/<id>``).
            started_by_run_id: The run that started it.
            owner_agent_id: The agent that started it.
            lease_run_ids: Runs holding it from the start.
            service_id: Its id when chosen beforehand (a UUID; default a new one).

        Raises:
            PortConflictError: A live instance holds ``port`` (its owner named).
            StateConflictError: The target is closed or being archived, or a run of
                ``lease_run_ids`` has finished.
            NotFoundError: The target is gone (a deleted project workspace), or a run of
                ``lease_run_ids`` is another company's.
        """
        target = self._startable(target, lease_run_ids, port)
        service = RuntimeService(
            service_id=service_id or str(uuid.uuid4()),
            company_id=target.company_id,
            target_key=target.key,
            execution_workspace_id=target.execution_workspace_id,
            project_workspace_id=target.project_workspace_id,
            service_name=service_name,
            workspace_command_id=workspace_command_id,
            service_index=service_index,
            command=command,
            cwd=cwd,
            port=port,
            url=url,
            lifecycle=lifecycle,
            scope_type=scope_type,
            scope_id=scope_id,
            reuse_key=reuse_key,
            stop_policy=_plain_policy(stop_policy),
            run_dir=run_dir,
            started_by_run_id=started_by_run_id,
            owner_agent_id=owner_agent_id,
            lease_run_ids=list(dict.fromkeys(lease_run_ids)),
            at=self.now(),
            node_id=self.node_id,
        )
        self.save(service)
        return str(service.id)

    def _startable(
        self, target: RuntimeTarget, lease_run_ids: tuple[str, ...], port: int | None
    ) -> RuntimeTarget:
        """The target as the inbox knows it now (not as the caller read it), once it is open,
        the leasing runs may hold a lease and ``port`` is free."""
        target = self.current(target)
        if not target.is_open:
            raise StateConflictError(
                f"The {target.label} is {'being archived' if target.closing else target.status}; "
                "no runtime service can start in it.",
                workspaceId=target.execution_workspace_id,
                status=target.status,
            )
        for run_id in lease_run_ids:
            self.check_lease_run(target.company_id, run_id)
        if port is not None:
            self._check_port_free(target, port)
        return target

    def _check_port_free(self, target: RuntimeTarget, port: int) -> None:
        owner = self.port_owners().get(port)
        if owner is None:
            return
        same = owner.target_key == target.key
        where = "this workspace's" if same else "another workspace's"
        conflicting = {
            "conflictingExecutionWorkspaceId": owner.execution_workspace_id,
            "conflictingProjectWorkspaceId": (
                owner.project_workspace_id if owner.execution_workspace_id is None else None
            ),
        }
        raise PortConflictError(
            f"Port {port} is reserved by {where} runtime service: {owner_label(owner)}.",
            port=port,
            runtimeServiceId=owner.id,
            serviceName=owner.service_name,
            **{k: v for k, v in conflicting.items() if v is not None},
        )

    def mark_spawned(
        self,
        service_id: str,
        *,
        pid: int,
        pgid: int,
        process_start_time: int | None,
        run_dir: str | None = None,
        wrapper_start_time: int | None = None,
    ) -> ServiceRecord:
        """Its process started (still ``starting``: readiness is not known yet); the wrapper's
        start time names its process group for later stops."""
        return self._change(
            service_id,
            lambda s: s.spawn(
                pid=pid,
                pgid=pgid,
                process_start_time=process_start_time,
                run_dir=run_dir,
                wrapper_start_time=wrapper_start_time,
            ),
        )

    def mark_running(
        self,
        service_id: str,
        *,
        url: str | None = None,
        pid: int | None = None,
        pgid: int | None = None,
        process_start_time: int | None = None,
    ) -> ServiceRecord:
        """Readiness passed: ``running`` and ``healthy`` (the process facts not given stay as
        ``mark_spawned`` recorded them)."""
        at = self.now()
        return self._change(
            service_id,
            lambda s: s.run(at, url=url, pid=pid, pgid=pgid, process_start_time=process_start_time),
        )

    def mark_start_failed(
        self,
        service_id: str,
        *,
        error: str,
        exit_code: int | None = None,
        exit_signal: int | None = None,
        last_output: str | None = None,
    ) -> ServiceRecord:
        """The start failed before readiness: ``failed``, port released (case 57)."""
        at = self.now()
        return self._change(
            service_id,
            lambda s: s.fail_start(
                at,
                error=error,
                exit_code=exit_code,
                exit_signal=exit_signal,
                last_output=last_output,
            ),
        )

    def mark_stopped(
        self,
        service_id: str,
        *,
        stop_reason: str,
        exit_code: int | None = None,
        exit_signal: int | None = None,
        last_output: str | None = None,
    ) -> ServiceRecord:
        """Stopped (or ended with status 0 / SIGTERM): ``stopped``, port released. A second
        report of an instance's end changes nothing."""
        at = self.now()
        return self._change(
            service_id,
            lambda s: s.stop(
                at,
                stop_reason=stop_reason,
                exit_code=exit_code,
                exit_signal=exit_signal,
                last_output=last_output,
            ),
        )

    def mark_failed(
        self,
        service_id: str,
        *,
        error: str | None = None,
        exit_code: int | None = None,
        exit_signal: int | None = None,
        last_output: str | None = None,
    ) -> ServiceRecord:
        """Ended by itself otherwise than status 0 or SIGTERM: ``failed``, port released."""
        at = self.now()
        return self._change(
            service_id,
            lambda s: s.fail(
                at,
                error=error,
                exit_code=exit_code,
                exit_signal=exit_signal,
                last_output=last_output,
            ),
        )

    def mark_adopted(self, service_id: str, *, pid: int | None = None) -> ServiceRecord:
        """A restarted supervisor supervises the live process again, without restarting it."""
        at = self.now()
        return self._change(service_id, lambda s: s.adopt(at, pid=pid))

    def set_health(self, service_id: str, health_status: str) -> ServiceRecord:
        """A probe's verdict (``unknown | healthy | unhealthy``); recorded when it changed."""
        if health_status not in ("unknown", "healthy", "unhealthy"):
            raise InvalidInputError(f"Unknown health status {health_status!r}.")
        return self._change(service_id, lambda s: s.change_health(health_status))

    def touch(self, service_id: str) -> ServiceRecord:
        """The instance was used now (``lastUsedAt``)."""
        at = self.now()
        return self._change(service_id, lambda s: s.touch(at))


def _plain_policy(policy: StoredStopPolicy | StopPolicy | None) -> StoredStopPolicy | None:
    """A stop policy as stored: plain camelCase data."""
    if policy is None:
        return None
    if isinstance(policy, StopPolicy):
        plain: StoredStopPolicy = msgspec.to_builtins(policy)
        return plain
    return policy.copy()
