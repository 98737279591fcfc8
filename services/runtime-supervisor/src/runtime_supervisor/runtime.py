"""Starting runtime service instances (reference §6.2; DECISIONS 7, 8).

A start resolves the service's identity, reuses a healthy shared instance with the same reuse key
(adding the run's lease), else runs the lazy runtime provisioning, reserves a port and records
the ``starting`` instance in one call on the store's thread (so concurrent starts never share a
port), spawns the command under its wrapper, waits for readiness and records ``running`` (or
``failed``, its group stopped; whatever of it survives SIGKILL is named in the error and killed
again later). Starts and stops of one service identity are serialized
(:func:`runtime_supervisor.stopping.lock_key`); others run in parallel. Restart is a stop
(:mod:`runtime_supervisor.stopping`) then a start. An ``idle_timeout`` instance started or
reused without a run's lease gets its idle timer (:mod:`runtime_supervisor.idle`).

Once a stop-all drains the node nothing starts; the starts in flight are cancelled: each stops
what it spawned, records its instance ``failed`` and fails with 409 "the node is stopping" (a
cancellation by the supervisor's own shutdown leaves the service to the next one's adoption).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from runtime_supervisor.containment.relays import ensure_service_relay
from runtime_supervisor.containment.workspaces import (
    end_unit,
    forward_new_shared,
    limits_of,
    prepare_launch,
    service_unit,
)
from runtime_supervisor.domain import (
    ContainmentError,
    PortConflictError,
    PortsExhaustedError,
    ServiceRecord,
    StartFailedError,
    StateConflictError,
)
from runtime_supervisor.domain.service_record import tail_text
from runtime_supervisor.environment import service_env
from runtime_supervisor.identity import Identity, resolve
from runtime_supervisor.idle import arm_idle_timer
from runtime_supervisor.process import (
    NotReady,
    PortConflict,
    PortsExhausted,
    Spawned,
    SpawnError,
    last_output,
    read_status,
    spawn_service,
    wait_ready,
)
from runtime_supervisor.provisioning import ensure_provisioned
from runtime_supervisor.stopping import lock_key, stop_failed_start, stop_locked
from runtime_supervisor.watchers import forget, watch

if TYPE_CHECKING:
    from runtime_supervisor.config.effective import WorkspaceCommand
    from runtime_supervisor.context import Supervisor
    from runtime_supervisor.domain import IssueBrief, RuntimeTarget

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
            record = await _spawn(sup, target, identity, run_id, agent_id, lease_run)
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


def _reserve(
    sup: Supervisor,
    target: RuntimeTarget,
    identity: Identity,
    service_id: str,
    run_id: str | None,
    agent_id: str | None,
    lease_run: str | None,
) -> tuple[int | None, dict[str, str]]:
    """On the store's thread: pick the port and record the ``starting`` instance with it."""
    command = identity.command
    try:
        if identity.port_mode == "auto":
            port: int | None = sup.allocator.auto(owner=identity.owner)
        elif identity.port_mode == "fixed" and identity.fixed_port is not None:
            port = sup.allocator.fixed(identity.fixed_port, identity.owner)
        else:
            port = None
    except PortsExhausted as exc:
        raise PortsExhaustedError(str(exc), attempts=exc.attempts) from None
    except PortConflict as exc:
        details = {"port": exc.port, "owner": exc.owner, "ownerPid": exc.pid}
        raise PortConflictError(
            exc.message, **{k: v for k, v in details.items() if v is not None}
        ) from None
    try:
        env, url = identity.env(port), identity.url(port)
        sup.app.begin_start(
            target,
            service_name=command.name,
            command=command.command,
            cwd=str(identity.cwd),
            port=port,
            url=url,
            workspace_command_id=command.id,
            service_index=command.service_index,
            lifecycle=command.lifecycle,
            scope_type=identity.scope_type,
            scope_id=identity.scope_id,
            reuse_key=identity.reuse_key,
            stop_policy=command.stop_policy,
            run_dir=str(sup.settings.run_dir(service_id)),
            started_by_run_id=run_id,
            owner_agent_id=agent_id,
            lease_run_ids=(lease_run,) if lease_run else (),
            service_id=service_id,
        )
    finally:  # the state holds the reservation now (or nothing was recorded)
        if port is not None:
            sup.allocator.release(port)
    return port, env


async def _spawn(
    sup: Supervisor,
    target: RuntimeTarget,
    identity: Identity,
    run_id: str | None,
    agent_id: str | None,
    lease_run: str | None,
) -> ServiceRecord:
    service_id = str(uuid.uuid4())
    run_dir = sup.settings.run_dir(service_id)
    port, env = await sup.store(
        _reserve, sup, target, identity, service_id, run_id, agent_id, lease_run
    )
    name = identity.name
    spawned: Spawned | None = None
    relay: asyncio.Future[Any] | None = None
    try:
        try:
            launch = await prepare_launch(
                sup,
                target,
                service_unit(service_id),
                limits_of(identity.command.limits),
                identity.cwd,
                shared=identity.scope_type == "project_workspace",
            )
            if port is not None and launch.netns is not None:  # meanwhile, its preview relay
                relay = asyncio.ensure_future(
                    asyncio.to_thread(ensure_service_relay, run_dir, port, launch.netns)
                )
            spawned = await spawn_service(
                command=identity.command.command,
                cwd=identity.cwd,
                run_dir=run_dir,
                env=launch.env(
                    service_env(
                        sup.base_env, port=port, port_env_key=identity.env_key, rendered_env=env
                    )
                ),
                prefix=launch.prefix,
                preexec=launch.preexec,
            )
        except ContainmentError as exc:
            await _fail(sup, service_id, name, str(exc), "", run_dir, lease_run)
        except SpawnError as exc:
            if relay is not None:
                await asyncio.gather(relay, return_exceptions=True)
            await end_unit(sup, service_unit(service_id))
            await _fail(sup, service_id, name, exc.message, exc.output, run_dir, lease_run)
        await sup.store(
            sup.app.mark_spawned,
            service_id,
            pid=spawned.pid,
            pgid=spawned.pgid,
            process_start_time=spawned.start_time,
            run_dir=str(run_dir),
            wrapper_start_time=spawned.wrapper_start_time or None,
        )
        if relay is not None:
            await relay
        await _ready(sup, identity, port, spawned, launch.netns)
    except (NotReady, ValueError, OSError) as exc:
        assert spawned is not None
        survivors = await stop_failed_start(
            sup, service_id, spawned.pgid, spawned.wrapper_start_time or None
        )
        reason = exc.message if isinstance(exc, NotReady) else str(exc)
        await _fail(
            sup,
            service_id,
            name,
            reason,
            last_output(spawned.log_path),
            run_dir,
            lease_run,
            survivors,
        )
    except asyncio.CancelledError:
        if sup.draining:  # a stop-all: end what this start began (a shutdown leaves it running)
            survivors = (
                await stop_failed_start(
                    sup, service_id, spawned.pgid, spawned.wrapper_start_time or None
                )
                if spawned
                else []
            )
            with contextlib.suppress(StartFailedError):
                await _fail(
                    sup,
                    service_id,
                    name,
                    "the node is stopping",
                    last_output(run_dir / "output.log"),
                    run_dir,
                    lease_run,
                    survivors,
                )
        raise
    running: ServiceRecord = await sup.store(sup.app.mark_running, service_id)
    if identity.scope_type == "project_workspace" and target.project_workspace_id and port:
        await forward_new_shared(sup, target.project_workspace_id, port)
    watch(sup, running)
    arm_idle_timer(sup, running)  # started without a lease: idle from now
    return running


async def _ready(
    sup: Supervisor, identity: Identity, port: int | None, spawned: Spawned, netns: Path | None
) -> None:
    readiness = identity.command.readiness
    interval = getattr(readiness, "interval_ms", None)
    await wait_ready(
        readiness,
        url=identity.readiness_url(port),
        port=port,
        log_path=spawned.log_path,
        timeout=getattr(readiness, "timeout_sec", None) or sup.settings.ready_timeout,
        interval=max(interval / 1000, 0.1) if interval else 0.1,
        exited=lambda: read_status(spawned.run_dir),
        netns=netns,
    )


async def _fail(
    sup: Supervisor,
    service_id: str,
    name: str,
    reason: str,
    output: str,
    run_dir: Path,
    lease_run: str | None,
    survivors: list[int] | None = None,
) -> NoReturn:
    """Record the failed start (case 57; the run's lease on it released) and raise it, with
    the last output; processes of its group that survived SIGKILL are named in the error."""
    status = read_status(run_dir)
    error = f'Failed to start runtime service "{name}": {reason}'
    if survivors:
        pids = ", ".join(str(p) for p in survivors)
        error += f" (processes of its group survived SIGKILL and are still running: {pids})"
    record: ServiceRecord = await sup.store(
        sup.app.mark_start_failed,
        service_id,
        error=error,
        exit_code=status.code if status else None,
        exit_signal=status.signal if status else None,
        last_output=output or None,
    )
    if lease_run is not None:
        record, _ = await sup.store(sup.app.release_lease, service_id, lease_run)
    forget(sup, record)
    tail = tail_text(output) or ""
    raise StartFailedError(
        f"{error} | output: {tail}" if tail.strip() else error,
        runtimeServiceId=service_id,
        serviceName=name,
        exitCode=record.exit_code,
        exitSignal=record.exit_signal,
        lastOutput=record.last_output,
        **({"survivors": survivors} if survivors else {}),
    )
