"""Use cases of a target's runtime as a whole: the desired state the patch rule computed, lazy
runtime provisioning, and the runtime-control lease the lease rule granted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from eventsourcing.application import AggregateNotFoundError

from runtime_supervisor.domain import LeaseConflictError, WorkspaceRuntime, runtime_id
from runtime_supervisor.usecases.queries import Queries
from runtime_supervisor.usecases.views import provisioning_view

if TYPE_CHECKING:
    from contracts.execution_views import RuntimeProvisioning
    from runtime_supervisor.domain import RuntimeTarget
    from runtime_supervisor.domain.leases import ControlLease, LeaseDecision

__all__ = ["RuntimeUseCases"]


class RuntimeUseCases(Queries):
    """Record desired states, provisioning and runtime-control leases of targets."""

    def _runtime(self, target: RuntimeTarget) -> WorkspaceRuntime:
        """The target's runtime record, created on first use (not saved yet)."""
        try:
            found: WorkspaceRuntime = self.repository.get(runtime_id(target.key))
        except AggregateNotFoundError:
            found = WorkspaceRuntime(
                target_key=target.key,
                company_id=target.company_id,
                execution_workspace_id=target.execution_workspace_id,
                project_workspace_id=target.project_workspace_id,
            )
        return found

    def _save_runtime(self, runtime: WorkspaceRuntime) -> None:
        if runtime.pending_events:
            self.save(runtime)

    def record_desired(
        self, target: RuntimeTarget, desired_state: str, service_states: Mapping[str, str]
    ) -> bool:
        """Record the desired state computed by ``desired_state_patch`` (reference §6.5);
        return whether it changed."""
        runtime = self._runtime(target)
        changed = runtime.change_desired(
            desired_state, {str(k): v for k, v in service_states.items()}
        )
        self._save_runtime(runtime)
        return changed

    def provisioning_started(
        self, target: RuntimeTarget, *, operation_id: str | None, command: str
    ) -> RuntimeProvisioning:
        """The runtime provision command began in the target's current checkout."""
        runtime = self._runtime(target)
        runtime.start_provisioning(
            operation_id=operation_id,
            command=command,
            at=self.now(),
            checkout_version=target.checkout_version,
        )
        self.save(runtime)
        return provisioning_view(target, self.provisioning(target))

    def provisioning_succeeded(
        self, target: RuntimeTarget, *, operation_id: str | None
    ) -> RuntimeProvisioning:
        """The runtime provision command succeeded: ``provisioned``."""
        runtime = self._runtime(target)
        runtime.succeed_provisioning(operation_id=operation_id, at=self.now())
        self.save(runtime)
        return provisioning_view(target, self.provisioning(target))

    def provisioning_failed(
        self, target: RuntimeTarget, *, operation_id: str | None, error: str
    ) -> RuntimeProvisioning:
        """The runtime provision command failed; the next start runs it again."""
        runtime = self._runtime(target)
        runtime.fail_provisioning(operation_id=operation_id, at=self.now(), error=error)
        self.save(runtime)
        return provisioning_view(target, self.provisioning(target))

    def claim_control_lease(
        self, target: RuntimeTarget, decision: LeaseDecision
    ) -> ControlLease | None:
        """Record what the lease rule (``leases.decide``) decided (reference §6.8): a
        ``claimed``, ``renewed`` or ``reclaimed`` lease is recorded; ``bypassed`` records nothing.

        Returns:
            The target's lease as recorded now.

        Raises:
            LeaseConflictError: The decision is a ``conflict`` (409, its details).
        """
        if decision.outcome == "conflict":
            if decision.conflict is None:
                raise LeaseConflictError(decision.message)
            raise LeaseConflictError(decision.message, **decision.conflict.details())
        if decision.outcome == "bypassed":
            return self.control_lease(target)
        lease = decision.lease
        if lease is None:
            raise ValueError(f"a {decision.outcome} decision carries its lease")
        runtime = self._runtime(target)
        runtime.claim_lease(
            outcome=decision.outcome,
            owner_key=lease.owner_key,
            owner_issue_id=lease.owner_issue_id,
            owner_run_id=lease.owner_run_id,
            owner_agent_id=lease.owner_agent_id,
            action=lease.last_action,
            at=lease.renewed_at,
            expires_at=lease.expires_at,
            reclaimed_from=decision.reclaimed_from,
        )
        self.save(runtime)
        return self.control_lease(target)

    def release_control_lease(self, target: RuntimeTarget, owner_key: str | None = None) -> bool:
        """Release the lease: its owner's (``owner_key``) or, with None, whoever holds it
        (an archive); return whether one was released."""
        if target.key not in self.runtimes:
            return False
        runtime = self._runtime(target)
        released = runtime.release_lease(self.now(), owner_key=owner_key)
        self._save_runtime(runtime)
        return released
