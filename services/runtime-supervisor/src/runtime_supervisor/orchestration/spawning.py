"""Spawning one new runtime service instance (reference §6.2 steps 3-7; DECISIONS 8): the port
reserved and the ``starting`` instance recorded in one call on the store's thread (so concurrent
starts never share a port), the launch contained, the command spawned under its wrapper (with its
preview relay meanwhile), readiness waited for, then ``running``; else ``failed`` with its group
stopped and whatever of it survived SIGKILL named in the error. A cancellation by a stop-all
ends what the start began; one by the supervisor's own shutdown leaves it to the next one's
adoption.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from runtime_supervisor.adapters.containment.forwarding import forward_new_shared
from runtime_supervisor.adapters.containment.relays import ensure_service_relay
from runtime_supervisor.adapters.containment.workspaces import (
    end_unit,
    limits_of,
    prepare_launch,
    service_unit,
)
from runtime_supervisor.adapters.process import (
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
from runtime_supervisor.domain import (
    ContainmentError,
    PortConflictError,
    PortsExhaustedError,
    ServiceRecord,
    StartFailedError,
)
from runtime_supervisor.domain.environment import service_env
from runtime_supervisor.domain.identity import Identity
from runtime_supervisor.domain.service_record import tail_text
from runtime_supervisor.orchestration.idle import arm_idle_timer
from runtime_supervisor.orchestration.stopping import stop_failed_start
from runtime_supervisor.orchestration.watchers import forget, watch

if TYPE_CHECKING:
    from runtime_supervisor.adapters.containment.workspaces import ContainedLaunch
    from runtime_supervisor.domain import RuntimeTarget
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["spawn_instance"]


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


async def _launch(
    sup: Supervisor,
    target: RuntimeTarget,
    identity: Identity,
    service_id: str,
    reserved: tuple[int | None, dict[str, str]],
    lease_run: str | None,
) -> tuple[Spawned, ContainedLaunch, asyncio.Future[Any] | None]:
    """Contain and spawn the instance (its preview relay started meanwhile); a launch that
    cannot be contained or spawned is recorded failed and raised (:func:`_fail`)."""
    port, env = reserved
    run_dir = sup.settings.run_dir(service_id)
    relay: asyncio.Future[Any] | None = None
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
        await _fail(sup, service_id, identity.name, str(exc), "", run_dir, lease_run)
    except SpawnError as exc:
        if relay is not None:
            await asyncio.gather(relay, return_exceptions=True)
        await end_unit(sup, service_unit(service_id))
        await _fail(sup, service_id, identity.name, exc.message, exc.output, run_dir, lease_run)
    return spawned, launch, relay


async def spawn_instance(
    sup: Supervisor,
    target: RuntimeTarget,
    identity: Identity,
    run_id: str | None,
    agent_id: str | None,
    lease_run: str | None,
) -> ServiceRecord:
    """Spawn a new instance of ``identity`` (the caller holds its identity's lock) and return
    it ``running``, watched and, without a lease, with its idle timer armed.

    Raises:
        StartFailedError: Spawn error, exit before readiness, readiness timeout.
        PortConflictError, PortsExhaustedError: No port for it.
        StateConflictError: A stop-all cancelled the start.
    """
    service_id = str(uuid.uuid4())
    run_dir = sup.settings.run_dir(service_id)
    reserved = await sup.store(
        _reserve, sup, target, identity, service_id, run_id, agent_id, lease_run
    )
    port = reserved[0]
    name = identity.name
    spawned: Spawned | None = None
    try:
        spawned, launch, relay = await _launch(
            sup, target, identity, service_id, reserved, lease_run
        )
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
    return await _live(sup, target, identity, service_id, port)


async def _live(
    sup: Supervisor, target: RuntimeTarget, identity: Identity, service_id: str, port: int | None
) -> ServiceRecord:
    """Record the ready instance ``running``, forward a shared one into its project
    workspace's namespaces, watch it and arm its idle timer."""
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
