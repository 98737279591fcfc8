"""Starting runtime service instances (reference §6.2; DECISIONS 7, 8).

A start resolves the service's identity, reuses a healthy shared instance with the same reuse key
(adding the run's lease), else runs the lazy runtime provisioning, reserves a port and records
the ``starting`` instance in one call on the store's thread (so concurrent starts never share a
port), spawns the command under its wrapper, waits for readiness and records ``running`` (or
``failed``, its group stopped; whatever of it survives SIGKILL is named in the error and killed
again later). Starts and stops of one service identity are serialized
(:func:`runtime_supervisor.orchestration.stopping.lock_key`); others run in parallel. Restart is a stop
(:mod:`runtime_supervisor.orchestration.stopping`) then a start. An ``idle_timeout`` instance started or
reused without a run's lease gets its idle timer (:mod:`runtime_supervisor.orchestration.idle`).

Once a stop-all drains the node nothing starts; the starts in flight are cancelled: each stops
what it spawned, records its instance ``failed`` and fails with 409 "the node is stopping" (a
cancellation by the supervisor's own shutdown leaves the service to the next one's adoption).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime_supervisor.domain import (
    ServiceRecord,
    StateConflictError,
)
from runtime_supervisor.domain.identity import Identity, resolve
from runtime_supervisor.orchestration.idle import arm_idle_timer
from runtime_supervisor.orchestration.provisioning import ensure_provisioned
from runtime_supervisor.orchestration.spawning import spawn_instance
from runtime_supervisor.orchestration.stopping import lock_key, stop_locked
from runtime_supervisor.orchestration.watchers import watch

if TYPE_CHECKING:
    from runtime_supervisor.domain import IssueBrief, RuntimeTarget
    from runtime_supervisor.domain.config.effective import WorkspaceCommand
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["Started", "start_service"]


@dataclass(frozen=True, kw_only=True)
class Started:
    """A started (or reused) instance."""

    record: ServiceRecord
    reused: bool


async def start_service(
    sup: Supervisor,
    target: RuntimeTarget,
    command: WorkspaceCommand,
    *,
    run_id: str | None = None,
    agent_id: str | None = None,
    issue: IssueBrief | None = None,
    lease: bool = False,
    operation_id: str | None = None,
) -> Started:
    """Start (or reuse) one configured service of ``target``.

    Args:
        sup: The supervisor.
        target: Where it runs.
        command: The configured service.
        run_id: The run that asks (scope ``run``; with ``lease``, it holds the instance).
        agent_id: The agent that asks.
        issue: The issue of the templates (default: the target's source issue).
        lease: Lease the instance to ``run_id``.
        operation_id: The long operation this start belongs to (named by the provisioning).

    Raises:
        StartFailedError: Spawn error, exit before readiness, readiness timeout.
        ProvisioningFailedError: The lazy runtime provision command failed.
        PortConflictError, PortsExhaustedError: No port for it.
        InvalidInputError, TemplateError: Its config cannot be resolved (422).
        StateConflictError: The target is closed or being archived, the run has finished,
            or the node is stopping (a stop-all cancelled or refused the start).
    """
    sup.check_accepting()
    identity = resolve(target, command, run_id=run_id, agent_id=agent_id, issue=issue)
    lease_run = run_id if lease else None
    task = asyncio.current_task()
    if task is not None:
        sup.starts.add(task)
    try:
        async with sup.locks.hold(
            lock_key(target.key, command.id, identity.scope_id, identity.reuse_key)
        ):
            sup.check_accepting()
            existing = await sup.store(_existing, sup, target, identity)
            if (
                existing is not None
                and existing.status == "running"
                and (existing.health_status == "healthy")
            ):
                return Started(record=await _reuse(sup, existing, lease_run), reused=True)
            if existing is not None:  # starting after a restart, or unhealthy: replace it
                await stop_locked(sup, existing, reason="replaced by a new start")
            await ensure_provisioned(sup, target, operation_id=operation_id)
            record = await spawn_instance(sup, target, identity, run_id, agent_id, lease_run)
            return Started(record=record, reused=False)
    except asyncio.CancelledError:
        if not sup.draining or task is None:
            raise  # the supervisor is shutting down: what runs is adopted by the next one
        task.uncancel()  # a stop-all cancelled this start: it fails like any other
        raise StateConflictError(
            f'The node is stopping: the start of runtime service "{command.name}" was cancelled.',
            node=sup.node_id,
        ) from None
    finally:
        if task is not None:
            sup.starts.discard(task)


def _existing(sup: Supervisor, target: RuntimeTarget, identity: Identity) -> ServiceRecord | None:
    """On the store's thread: a live instance of the same identity, healthy running first."""
    app = sup.app
    if identity.reuse_key:
        found = app.find_shared(identity.reuse_key)
        if found is not None:
            return found
        live = [s for s in app.live_services() if s.reuse_key == identity.reuse_key]
    else:
        live = [
            s
            for s in app.services_of(target, include_inherited=False)
            if s.live
            and s.reuse_key is None
            and s.scope_id == identity.scope_id
            and s.workspace_command_id == identity.command.id
        ]
    return live[-1] if live else None


async def _reuse(sup: Supervisor, record: ServiceRecord, lease_run: str | None) -> ServiceRecord:
    sup.cancel_idle_timer(record.id)
    if lease_run is not None:
        reused: ServiceRecord = await sup.store(sup.app.acquire_lease, record.id, lease_run)
    else:
        reused = await sup.store(sup.app.touch, record.id)
    watch(sup, reused)
    arm_idle_timer(sup, reused)  # used without a lease: idle from now
    return reused
