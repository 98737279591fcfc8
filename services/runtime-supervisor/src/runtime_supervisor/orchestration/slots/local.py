"""Launching a ``local_stdio`` adapter: its place (the workspace's worktree or a scratch
folder), for an untrusted agent its containment (the company's identity, its resource unit, its
network namespace with the API relayed in, the worktree handed over), the process, and the task
that watches it until it ends and hands everything back."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contracts.slots import AdapterLaunched
from runtime_supervisor.adapters.containment.cgroups import Limits
from runtime_supervisor.adapters.containment.forwarding import forward_shared
from runtime_supervisor.adapters.containment.launcher import ContainmentUnavailableError
from runtime_supervisor.adapters.containment.netns import NetnsError
from runtime_supervisor.adapters.containment.relays import ensure_api_relay
from runtime_supervisor.adapters.containment.workspaces import api_port
from runtime_supervisor.adapters.slots.adapter import AdapterOutcome, spawn_adapter
from runtime_supervisor.adapters.slots.layout import LayoutError
from runtime_supervisor.adapters.slots.local import Placement, contain, give_back, placement_of
from runtime_supervisor.adapters.slots.sandbox import Confinement, plan_launch
from runtime_supervisor.domain import InvalidInputError, NotFoundError, StateConflictError
from runtime_supervisor.orchestration.egress import hold, open_namespace
from runtime_supervisor.orchestration.slots.base import Running, SlotBase
from servicekit.childenv import sanitize_env

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from contracts.slots import LaunchAdapter
    from runtime_supervisor.adapters.containment.cgroups import Unit
    from runtime_supervisor.adapters.containment.identities import Identity
    from runtime_supervisor.adapters.slots.adapter import AdapterProcess
    from runtime_supervisor.adapters.slots.layout import GitLayout
    from runtime_supervisor.usecases.slots import SlotInfo

__all__ = ["LocalLaunches"]


@dataclass
class _Handed:
    """What a launch in progress has taken so far (given back if it fails)."""

    placement: Placement | None = None
    identity: Identity | None = None
    unit: Unit | None = None
    layout: GitLayout | None = None
    handed: bool = False


class LocalLaunches(SlotBase):
    """Launches of process adapters."""

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

    async def _confine(self, info: SlotInfo, c: LaunchAdapter, taken: _Handed) -> Confinement:
        """Contain an untrusted adapter: its unit, namespace and the worktree handed over."""
        assert taken.placement is not None
        contained = await asyncio.to_thread(  # its memoryMb bounds its unit too
            self.launcher.prepare,
            info.company_id,
            self._unit_name(c.run_id),
            Limits(memory_mb=c.limits.memory_mb),
        )
        taken.identity, taken.unit = contained.identity, contained.unit
        namespace = await asyncio.to_thread(self._namespace, c)
        await self._hold(info, c, namespace)
        taken.layout = await contain(taken.placement, contained.identity)
        taken.handed = True
        tools, _ids, _groups = self.launcher.require()
        return Confinement(
            identity=contained.identity,
            tools=tools,
            layout=taken.layout,
            toolchains=self.launcher.toolchains,
            netns=namespace,
        )

    async def _start_local(
        self, info: SlotInfo, c: LaunchAdapter, taken: _Handed, log_path: Path
    ) -> AdapterProcess:
        """Place, contain (when untrusted) and spawn the adapter; ``taken`` notes what to give
        back should it fail."""
        sup = self.sup
        taken.placement = await sup.store(
            placement_of,
            sup.app,
            info.company_id,
            c.workspace_id,
            sup.settings.slot_run_dir(c.run_id) / "scratch",
        )
        assert taken.placement is not None
        if not c.command:
            raise InvalidInputError("A process adapter needs a command.", field="command")
        confinement = await self._confine(info, c, taken) if info.contained else None
        env = {**sanitize_env(sup.base_env), **c.env}
        plan = plan_launch(
            c.command,
            cwd=taken.placement.cwd,
            env=env,
            limits=c.limits,
            confinement=confinement,
            unit=taken.unit,
        )
        sup.check_accepting()  # a stop-all may have begun while the place was handed over
        return await spawn_adapter(
            plan,
            log_path,
            under_bwrap=confinement is not None,
            log_limit=sup.settings.run_log_max_bytes,
        )

    async def _launch_local(
        self, info: SlotInfo, c: LaunchAdapter, deadline: datetime
    ) -> AdapterLaunched:
        """Start a process adapter (the caller holds the run's slot lock)."""
        app, sup = self.sup.app, self.sup
        taken = _Handed()
        log_path = sup.settings.slot_run_dir(c.run_id) / "run.log"
        try:
            adapter = await self._start_local(info, c, taken, log_path)
        except Exception as exc:
            message = _launch_error(exc)
            await self._record(info, AdapterOutcome(end="launch_failed", error=message))
            if taken.identity is not None and taken.placement is not None and taken.handed:
                await give_back(
                    taken.placement.cwd, taken.layout, taken.identity, taken.unit, c.run_id
                )
            elif taken.unit is not None:
                await asyncio.to_thread(taken.unit.kill)
                await asyncio.to_thread(taken.unit.remove)
            if isinstance(exc, NotFoundError | InvalidInputError):
                raise
            raise InvalidInputError(message, runId=c.run_id) from None
        placement, identity = taken.placement, taken.identity
        assert placement is not None
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
            self._watch(started, adapter, placement, taken.layout, c),
            name=f"slot-adapter-{c.run_id}",
        )
        self.running[c.run_id] = Running(slot_id=info.slot_id, task=task, adapter=adapter)
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
