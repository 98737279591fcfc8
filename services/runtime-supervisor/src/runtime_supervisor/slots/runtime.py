"""The orchestration of adapter slots: grant (with its 120 s launch deadline), launch (local
process or remote POST, watched by a task until it ends), kill, release, the run's end heard
from the controller, restart recovery and the stop-all of ``clipyard up``.

Every end is recorded in the slot's aggregate (``slot.adapter_finished.v1``, which the
controller collects); the slot then stays held until ``ReleaseSlot`` or the run's
``run.finished``. The request's ``env``, ``context`` and ``headers`` hold the run token: they
are handed to the adapter and nowhere else (no store, no log, no exception text).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.slots import AdapterLaunched, RunSlot, SlotGrant, SlotHealth
from runtime_supervisor.containment.cgroups import Limits
from runtime_supervisor.containment.launcher import ContainmentUnavailableError
from runtime_supervisor.containment.netns import NetnsError
from runtime_supervisor.containment.relays import ensure_api_relay
from runtime_supervisor.containment.workspaces import api_port, forward_shared
from runtime_supervisor.context import as_system
from runtime_supervisor.domain import InvalidInputError, NotFoundError, StateConflictError
from runtime_supervisor.egress import hold, let_go, open_namespace
from runtime_supervisor.process import last_output, stop_group
from runtime_supervisor.slots.adapter import ADAPTER_GRACE, AdapterOutcome, spawn_adapter
from runtime_supervisor.slots.layout import LayoutError
from runtime_supervisor.slots.local import (
    Placement,
    contain,
    give_back,
    placement_of,
    recovered_layout,
)
from runtime_supervisor.slots.remote import post_context
from runtime_supervisor.slots.sandbox import Confinement, plan_launch
from servicekit.childenv import sanitize_env

if TYPE_CHECKING:
    from contracts.slots import AcquireSlot, LaunchAdapter
    from runtime_supervisor.containment.identities import Identity
    from runtime_supervisor.containment.launcher import Launcher
    from runtime_supervisor.context import Supervisor
    from runtime_supervisor.slots.adapter import AdapterProcess
    from runtime_supervisor.slots.layout import GitLayout
    from runtime_supervisor.slots.usecases import SlotInfo

__all__ = ["SlotRuntime"]

log = logging.getLogger(__name__)
_LOG_TAIL = 64 * 1024


@dataclass(kw_only=True)
class _Running:
    slot_id: str
    task: asyncio.Task[None]
    adapter: AdapterProcess | None = None
    reason: str | None = None


@dataclass(kw_only=True)
class SlotRuntime:
    """The slots of one running supervisor."""

    sup: Supervisor
    launcher: Launcher
    running: dict[str, _Running] = field(default_factory=dict)
    """Run id -> its adapter being watched."""
    expiries: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    # Grants.

    async def acquire(self, c: AcquireSlot, scope: str | None) -> SlotGrant:
        """``AcquireSlot`` (see :meth:`SlotUseCases.acquire_slot`)."""
        self.sup.check_accepting()
        settings = self.sup.settings
        info: SlotInfo = await self.sup.store(
            self.sup.app.acquire_slot,
            scope,
            run_id=c.run_id,
            agent_id=c.agent_id,
            adapter_type=c.adapter_type,
            trusted=c.trusted,
            capacity=settings.slots,
            sandbox="bwrap" if self.launcher.available else None,
            sandbox_detail=self.launcher.detail,
            ttl=settings.slot_grant_ttl,
        )
        if info.state == "granted" and info.slot_id not in self.expiries:
            self.expiries[info.slot_id] = self.sup.spawn(
                self._expire(info), name=f"slot-expiry-{info.slot_id}"
            )
        return info.grant()

    async def _expire(self, info: SlotInfo) -> None:
        await asyncio.sleep(self.sup.settings.slot_grant_ttl)
        self.expiries.pop(info.slot_id, None)
        async with self.sup.locks.hold(f"slot:{info.run_id}"):
            current: SlotInfo = await self.sup.store(self.sup.app.slot_of_run, None, info.run_id)
            if current.slot_id == info.slot_id and current.state == "granted":
                with as_system("slot grant expired", run_id=info.run_id):
                    await self.sup.store(
                        self.sup.app.release_slot_record,
                        info.slot_id,
                        "never launched within the grant's time",
                    )

    def _disarm(self, slot_id: str) -> None:
        timer = self.expiries.pop(slot_id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()

    # Launch.

    async def launch(self, c: LaunchAdapter, scope: str | None) -> AdapterLaunched:
        """``LaunchAdapter``: start the adapter and watch it in the background."""
        self.sup.check_accepting()
        app = self.sup.app
        async with self.sup.locks.hold(f"slot:{c.run_id}"):
            info: SlotInfo = await self.sup.store(app.slot_of_run, scope, c.run_id)
            if info.slot_id != c.slot_id:
                raise NotFoundError(
                    f"Run {c.run_id} holds no slot {c.slot_id}.", runId=c.run_id, slotId=c.slot_id
                )
            if info.state != "granted":
                return await self._launched_again(info, c)
            self._disarm(info.slot_id)
            deadline = app.now() + timedelta(seconds=c.timeout_sec)
            if info.slot_type == "remote_http":
                await self.sup.store(
                    app.record_adapter_started,
                    info.slot_id,
                    workspace_id=c.workspace_id,
                    issue_id=c.issue_id,
                    pid=None,
                    pgid=None,
                    start_time=None,
                    slot_user=None,
                    cwd=None,
                    log_path=None,
                    deadline=deadline,
                )
                task = self.sup.spawn(self._remote(info, c), name=f"slot-remote-{c.run_id}")
                self.running[c.run_id] = _Running(slot_id=info.slot_id, task=task)
                return AdapterLaunched(
                    slot_id=info.slot_id, run_id=c.run_id, started_at=app.now(), deadline=deadline
                )
            return await self._launch_local(info, c, deadline)

    async def _launched_again(self, info: SlotInfo, c: LaunchAdapter) -> AdapterLaunched:
        if info.state != "running" or info.end is not None:
            raise StateConflictError(
                f"The slot of run {c.run_id} is {info.state}: its adapter cannot start again.",
                runId=c.run_id,
                state=info.state,
            )
        view: RunSlot = await self.sup.store(self.sup.app.run_slot_view, None, c.run_id)
        started = view.started_at or self.sup.app.now()
        return AdapterLaunched(
            slot_id=info.slot_id,
            run_id=c.run_id,
            pid=info.pid,
            pgid=info.pgid,
            started_at=started,
            deadline=started + timedelta(seconds=c.timeout_sec),
        )

    def _identity(self, info: SlotInfo) -> Identity | None:
        """The company's identity of a contained slot (None: a trusted one)."""
        if not info.contained:
            return None
        _tools, identities, _cgroups = self.launcher.require()
        return identities.of(info.company_id)

    def _unit_name(self, run_id: str) -> str:
        return f"run-{run_id}"

    def _namespace(self, c: LaunchAdapter) -> Path:
        """The run's network namespace (its workspace's, else its own), with the API the
        adapter is given relayed into it (blocking)."""
        namespace = self.launcher.namespace(c.workspace_id or c.run_id)
        port = api_port(c.env.get("CLIPYARD_API_URL") or self.sup.settings.api_url)
        if port is not None:
            ensure_api_relay(self.sup.settings.home, namespace.name, namespace, port)
        return namespace

    async def _hold(self, info: SlotInfo, c: LaunchAdapter, namespace: Path) -> None:
        """The run holds its namespace now: its gate is told whose it is and the agent's own
        allowlist entries apply (until :meth:`_let_go`); its project workspace's shared
        services are forwarded into it (the agent reaches its dev server on loopback)."""
        key = c.workspace_id or c.run_id
        folder = self.launcher.namespace_folder(key)
        if folder is None:
            return
        owner = await open_namespace(self.sup, folder, key, info.company_id)
        await asyncio.to_thread(hold, folder, c.run_id, c.egress_allowlist)
        if owner.project_workspace_id:
            await forward_shared(self.sup, owner.project_workspace_id, namespace)

    async def _let_go(self, workspace_id: str | None, run_id: str) -> None:
        folder = self.launcher.namespace_folder(workspace_id or run_id)
        if folder is not None:
            await asyncio.to_thread(let_go, folder, run_id)

    async def _launch_local(
        self, info: SlotInfo, c: LaunchAdapter, deadline: datetime
    ) -> AdapterLaunched:
        """Start a process adapter (the caller holds the run's slot lock)."""
        app, sup = self.sup.app, self.sup
        identity: Identity | None = None
        unit = None
        handed = False
        layout: GitLayout | None = None
        placement: Placement | None = None
        try:
            placement = await sup.store(
                placement_of,
                app,
                info.company_id,
                c.workspace_id,
                sup.settings.slot_run_dir(c.run_id) / "scratch",
            )
            assert placement is not None
            if not c.command:
                raise InvalidInputError("A process adapter needs a command.", field="command")
            confinement = None
            if info.contained:
                contained = await asyncio.to_thread(  # its memoryMb bounds its unit too
                    self.launcher.prepare,
                    info.company_id,
                    self._unit_name(c.run_id),
                    Limits(memory_mb=c.limits.memory_mb),
                )
                identity, unit = contained.identity, contained.unit
                namespace = await asyncio.to_thread(self._namespace, c)
                await self._hold(info, c, namespace)
                layout = await contain(placement, identity)
                handed = True
                tools, _ids, _groups = self.launcher.require()
                confinement = Confinement(
                    identity=identity,
                    tools=tools,
                    layout=layout,
                    toolchains=self.launcher.toolchains,
                    netns=namespace,
                )
            env = {**sanitize_env(sup.base_env), **c.env}
            plan = plan_launch(
                c.command,
                cwd=placement.cwd,
                env=env,
                limits=c.limits,
                confinement=confinement,
                unit=unit,
            )
            log_path = sup.settings.slot_run_dir(c.run_id) / "run.log"
            sup.check_accepting()  # a stop-all may have begun while the place was handed over
            adapter = await spawn_adapter(
                plan,
                log_path,
                under_bwrap=confinement is not None,
                log_limit=sup.settings.run_log_max_bytes,
            )
        except Exception as exc:
            message = _launch_error(exc)
            await self._record(info, AdapterOutcome(end="launch_failed", error=message))
            if identity is not None and placement is not None and handed:
                await give_back(placement.cwd, layout, identity, unit, c.run_id)
            elif unit is not None:
                await asyncio.to_thread(unit.kill)
                await asyncio.to_thread(unit.remove)
            if isinstance(exc, NotFoundError | InvalidInputError):
                raise
            raise InvalidInputError(message, runId=c.run_id) from None
        started: SlotInfo = await sup.store(
            app.record_adapter_started,
            info.slot_id,
            workspace_id=c.workspace_id,
            issue_id=c.issue_id,
            pid=adapter.pid,
            pgid=adapter.pgid,
            start_time=adapter.start_time,
            slot_user=f"{identity.name}:{identity.uid}" if identity is not None else None,
            cwd=str(placement.cwd),
            log_path=str(log_path),
            deadline=deadline,
        )
        task = sup.spawn(
            self._watch(started, adapter, placement, layout, c), name=f"slot-adapter-{c.run_id}"
        )
        self.running[c.run_id] = _Running(slot_id=info.slot_id, task=task, adapter=adapter)
        return AdapterLaunched(
            slot_id=info.slot_id,
            run_id=c.run_id,
            pid=adapter.pid,
            pgid=adapter.pgid,
            started_at=app.now(),
            deadline=deadline,
        )

    async def _watch(
        self,
        info: SlotInfo,
        adapter: AdapterProcess,
        placement: Placement,
        layout: GitLayout | None,
        c: LaunchAdapter,
    ) -> None:
        identity = self._identity(info)
        try:
            outcome = await adapter.wait(float(c.timeout_sec))
        finally:
            if identity is not None:
                await give_back(placement.cwd, layout, identity, adapter.unit, c.run_id)
                await self._let_go(c.workspace_id, c.run_id)
                if c.workspace_id is None:  # a run's own namespace ends with it
                    with contextlib.suppress(NetnsError):
                        await asyncio.to_thread(self.launcher.drop_namespace, c.run_id)
        await self._record(info, outcome)
        self.running.pop(c.run_id, None)

    async def _remote(self, info: SlotInfo, c: LaunchAdapter) -> None:
        try:
            outcome = await post_context(
                c.url or "", dict(c.headers), dict(c.context), float(c.timeout_sec)
            )
        except asyncio.CancelledError:
            running = self.running.get(c.run_id)
            reason = running.reason if running is not None else None
            if reason is None:
                raise
            outcome = AdapterOutcome(end=reason, error=f"the adapter was {reason}")
        await self._record(info, outcome)
        self.running.pop(c.run_id, None)

    async def _record(self, info: SlotInfo, outcome: AdapterOutcome) -> None:
        with as_system(f"adapter {outcome.end}", run_id=info.run_id):
            await self.sup.store(
                self.sup.app.record_adapter_end, info.slot_id, outcome.end, **outcome.fields()
            )

    # Kill and release.

    async def kill(self, run_id: str, scope: str | None, *, timed_out: bool = False) -> RunSlot:
        """``KillAdapter``: kill the adapter's whole group now; its end is ``killed`` (or
        ``timed_out``)."""
        await self.sup.store(self.sup.app.slot_of_run, scope, run_id)  # 404 first
        async with self.sup.locks.hold(f"slot:{run_id}"):  # after a launch in flight
            await self._stop(run_id, "timed_out" if timed_out else "killed")
        view: RunSlot = await self.sup.store(self.sup.app.run_slot_view, scope, run_id)
        return view

    async def _stop(self, run_id: str, reason: str) -> None:
        running = self.running.get(run_id)
        if running is None:
            return
        if running.reason is None:
            running.reason = reason
            if running.adapter is not None:
                running.adapter.kill(reason)
            else:
                running.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(running.task)

    async def release(self, run_id: str, scope: str | None, reason: str) -> bool:
        """``ReleaseSlot`` (and the run's end): under the run's slot lock (so a launch in flight
        has either not begun — it then finds the slot released — or has registered its adapter),
        kill a running adapter, then free the slot."""
        try:
            await self.sup.store(self.sup.app.slot_of_run, scope, run_id)  # 404 first
        except NotFoundError:
            return False
        async with self.sup.locks.hold(f"slot:{run_id}"):
            await self._stop(run_id, "killed")
            info: SlotInfo = await self.sup.store(self.sup.app.slot_of_run, scope, run_id)
            self._disarm(info.slot_id)
            released: bool = await self.sup.store(
                self.sup.app.release_slot_record, info.slot_id, reason
            )
        return released

    def run_finished(self, run_id: str) -> None:
        """The controller's ``run.finished`` (on the event loop): free the run's slot."""

        async def free() -> None:
            with as_system("its run finished", run_id=run_id):
                await self.release(run_id, None, "run finished")

        self.sup.spawn(free(), name=f"slot-run-finished-{run_id}")

    async def kill_all(self) -> int:
        """Stop-all: kill every running adapter; return how many there were."""
        runs = list(self.running)
        with as_system("stop all"):
            await asyncio.gather(*(self._stop(run_id, "killed") for run_id in runs))
        return len(runs)

    # Restart and health.

    async def recover(self) -> None:
        """At start: grants never launched are freed; adapters left running are recorded
        ``detached`` (what is left of their group killed, the worktree handed back); slots of
        finished runs are freed."""
        app = self.sup.app
        held: list[SlotInfo] = await self.sup.store(app.held_slots)
        for info in held:
            with as_system("supervisor restarted", run_id=info.run_id):
                if info.state == "granted":
                    await self.sup.store(
                        app.release_slot_record,
                        info.slot_id,
                        "the supervisor restarted before its launch",
                    )
                    continue
                if info.state == "running":
                    await self._detach(info)
                run = await self.sup.store(app.run, None, info.run_id)
                if run is not None and run.terminal:
                    await self.sup.store(app.release_slot_record, info.slot_id, "run finished")

    async def _detach(self, info: SlotInfo) -> None:
        gone = True
        placement: Placement | None = None
        if info.pgid is not None:
            outcome = await stop_group(
                info.pgid, grace=ADAPTER_GRACE, leader_start_time=info.start_time
            )
            gone = not outcome.survivors
        identity = self._identity(info) if self.launcher.available else None
        if identity is not None:
            await self._let_go(info.workspace_id, info.run_id)
        if identity is not None and info.cwd:
            with contextlib.suppress(NotFoundError, InvalidInputError):
                placement = await self.sup.store(
                    placement_of,
                    self.sup.app,
                    info.company_id,
                    info.workspace_id,
                    self.sup.settings.slot_run_dir(info.run_id) / "scratch",
                )
            if placement is None or placement.cwd != Path(info.cwd):
                placement = Placement(cwd=Path(info.cwd), scratch=info.workspace_id is None)
            layout = await asyncio.to_thread(recovered_layout, placement)
            await give_back(
                placement.cwd,
                layout,
                identity,
                self.launcher.unit(self._unit_name(info.run_id)),
                info.run_id,
            )
        tail, size = "", None
        if info.log_path:
            tail, size = await asyncio.to_thread(_log_tail, Path(info.log_path))
        await self._record(
            info,
            AdapterOutcome(
                end="detached",
                stdout_excerpt=tail,
                log_bytes=size,
                group_gone=gone,
                error="the runtime-supervisor stopped while the adapter ran",
            ),
        )

    async def health(self) -> list[SlotHealth]:
        """``GetSlotHealth``."""
        counts: dict[str, int] = await self.sup.store(self.sup.app.slots_in_use)
        detail = self.launcher.detail
        healthy = self.launcher.available and not self.sup.draining
        if self.sup.draining:
            detail = "The node is stopping: no adapter starts on it any more."
        return [
            SlotHealth(
                type="local_stdio",
                capacity=self.sup.settings.slots,
                in_use=counts.get("local_stdio", 0),
                healthy=healthy,
                sandbox="bwrap" if self.launcher.available else "none",
                detail=detail,
            ),
            SlotHealth(
                type="remote_http", capacity=None, in_use=counts.get("remote_http", 0), healthy=True
            ),
        ]


def _log_tail(path: Path) -> tuple[str, int | None]:
    """The last 64 KiB of a run's log and its size (None without a log)."""
    try:
        size = path.stat().st_size
    except OSError:
        return "", None
    return last_output(path, _LOG_TAIL), size


def _launch_error(exc: Exception) -> str:
    """What to say of a failed launch (never the environment)."""
    if isinstance(exc, FileNotFoundError):
        return f"The adapter's command was not found: {exc.filename}."
    if isinstance(exc, PermissionError):
        return f"The adapter's command could not be run: permission denied ({exc.filename})."
    if isinstance(exc, NotFoundError | InvalidInputError | StateConflictError):
        return str(exc)
    if isinstance(exc, LayoutError):
        return f"The worktree cannot be handed to the company's identity safely: {exc}"
    if isinstance(exc, ContainmentUnavailableError | NetnsError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"The adapter could not be started: {exc}."
    return f"The adapter could not be started: {type(exc).__name__}."
