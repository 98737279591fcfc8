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
from datetime import timedelta
from typing import TYPE_CHECKING

from contracts.slots import AdapterLaunched, RunSlot, SlotGrant, SlotHealth
from runtime_supervisor.adapters.slots.adapter import AdapterOutcome
from runtime_supervisor.adapters.slots.remote import post_context
from runtime_supervisor.domain import NotFoundError, StateConflictError
from runtime_supervisor.orchestration.context import as_system
from runtime_supervisor.orchestration.slots.base import Running
from runtime_supervisor.orchestration.slots.local import LocalLaunches
from runtime_supervisor.orchestration.slots.recovery import Recovery

if TYPE_CHECKING:
    from contracts.slots import AcquireSlot, LaunchAdapter
    from runtime_supervisor.usecases.slots import SlotInfo

__all__ = ["SlotRuntime"]


class SlotRuntime(LocalLaunches, Recovery):
    """The slots of one running supervisor."""

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
                self.running[c.run_id] = Running(slot_id=info.slot_id, task=task)
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

    # Kill and release.

    async def kill(self, run_id: str, scope: str | None, *, timed_out: bool = False) -> RunSlot:
        """``KillAdapter``: kill the adapter's whole group now; its end is ``killed`` (or
        ``timed_out``)."""
        await self.sup.store(self.sup.app.slot_of_run, scope, run_id)  # 404 first
        async with self.sup.locks.hold(f"slot:{run_id}"):  # after a launch in flight
            await self._stop(run_id, "timed_out" if timed_out else "killed")
        view: RunSlot = await self.sup.store(self.sup.app.run_slot_view, scope, run_id)
        return view

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
