"""The dispatcher: starts queued runs when they may start.

It wakes on every nudge (a wake, a finished run, a lease hand-over, an issue event noted by the
inbox) and on a periodic tick, which also asks the application for due timer wakes
(``due_timer_wakes``). Each pass calls ``claim_runnable`` on the store's thread and starts one
runner task per claim; a failing pass or run is logged and never stops the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from eventstore import acting, system_cause
from heartbeat_controller.orchestration.cleanup import cleanup
from heartbeat_controller.orchestration.collect import Outcome
from heartbeat_controller.orchestration.runner import run_claim
from heartbeat_controller.orchestration.work import RunWork, work_of_claim

if TYPE_CHECKING:
    from contracts.agents import WakeAccepted
    from heartbeat_controller.orchestration.context import Orchestration

__all__ = ["Dispatcher", "EndpointHooks"]

log = logging.getLogger(__name__)

SERVICE = "heartbeat-controller"

RunBody = Callable[["Orchestration", RunWork], Awaitable[None]]


class Dispatcher:
    """Claims runnable runs and starts their tasks (one per process)."""

    def __init__(self, orch: Orchestration, *, body: RunBody = run_claim) -> None:
        self.orch = orch
        self._body = body
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()
        self.passes = 0
        orch.nudge = self.nudge

    def nudge(self) -> None:
        """Run a pass soon (event-loop thread)."""
        self._wake.set()

    def nudge_threadsafe(self) -> None:
        """Run a pass soon (from any thread: the store's, for the inbox)."""
        self._loop.call_soon_threadsafe(self._wake.set)

    def start(self) -> None:
        """Start the loop (a first pass at once)."""
        self._wake.set()
        self._task = asyncio.create_task(self._run(), name="heartbeat-dispatcher")

    async def stop(self) -> None:
        """Stop the loop (runs in flight are the orchestration's to stop)."""
        task, self._task = self._task, None
        if task is None:
            return
        # Cancel until it ends: on Python 3.11 ``asyncio.wait_for`` can swallow a cancellation
        # that lands as its inner wait completes, and the loop would go on (a stop then hung).
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=0.1)
        with contextlib.suppress(asyncio.CancelledError):
            task.result()

    async def _run(self) -> None:
        tick = self.orch.settings.tick
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), tick)
            self._wake.clear()
            try:
                await self.dispatch()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("dispatcher pass failed")

    async def dispatch(self) -> list[str]:
        """One pass: due timer wakes, then claim and start what may start.

        Returns:
            The ids of the runs started.
        """
        orch = self.orch
        self.passes += 1
        now = orch.settings.clock()
        try:
            with acting(system_cause(SERVICE, "heartbeat timer")):
                await orch.store(orch.app.due_timer_wakes, now)
        except Exception:
            log.exception("timer wakes failed")
        with acting(system_cause(SERVICE, "run dispatch")):
            claims: list[Any] = await orch.store(orch.app.claim_runnable, now)
        started: list[str] = []
        for claim in claims:
            try:
                self.start_claim(claim)
                started.append(claim.run_id)
            except Exception:
                log.exception("run %s could not be started", getattr(claim, "run_id", "?"))
        return started

    def start_claim(self, claim: Any) -> asyncio.Task[None]:
        """Start the task of one claimed run."""
        channel = self.orch.open(claim.run_id)
        try:
            work = work_of_claim(claim, channel)
        except Exception as error:  # the run is claimed: it must still end, through cleanup
            log.exception("run %s: its claim cannot be run", claim.run_id)
            work = RunWork(
                run_id=claim.run_id,
                company_id=claim.company_id,
                agent_id=str(getattr(claim, "agent_id", "") or ""),
                issue_id=claim.issue_id,
                workspace_id=claim.workspace_id,
                channel=channel,
            )
            outcome = Outcome("failed", "adapter_launch_failed", f"bad agent config: {error}")
            return self.orch.spawn(cleanup(self.orch, work, outcome), name=f"run-{claim.run_id}")
        return self.start_work(work)

    def start_work(self, work: RunWork, *, body: RunBody | None = None) -> asyncio.Task[None]:
        """Start a task driving ``work`` (a claim with the run's stages, or ``body``: a run
        recovery re-attaches)."""
        drive = body or self._body

        async def task() -> None:
            with acting(system_cause(SERVICE, "heartbeat run", run_id=work.run_id)):
                await drive(self.orch, work)

        return self.orch.spawn(task(), name=f"run-{work.run_id}")


class EndpointHooks:
    """What the endpoints tell the orchestration after a save: a wake, a cancel, an agent's
    delete; each nudges the dispatcher."""

    def __init__(self, orch: Orchestration, dispatcher: Dispatcher) -> None:
        self._orch = orch
        self._dispatcher = dispatcher

    async def woke(self, _accepted: WakeAccepted) -> None:
        """A wake was accepted: the queue may hold a runnable run."""
        self._dispatcher.nudge()

    async def cancelled(self, run_id: str) -> None:
        """A running run's cancel was saved: its task stops (kept until recovery opens the
        run's channel)."""
        self._orch.request_cancel(run_id)
        self._dispatcher.nudge()

    async def agent_deleted(self, run_ids: list[str]) -> None:
        """An agent was deleted: its running runs stop."""
        for run_id in run_ids:
            self._orch.request_cancel(run_id)
        self._dispatcher.nudge()
