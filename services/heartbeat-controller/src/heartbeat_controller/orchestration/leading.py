"""The controller's singleton work: the runs, on the replica holding the service's lease.

Every replica answers the agent and run endpoints (a wake, a cancel and an agent's delete are saves
in the shared store); one replica, the lease holder (:mod:`servicekit.leadership`), runs the runs:
at its grant it revokes trust a board key gave (a start-up sweep), re-attaches the runs left
``running`` (:func:`~heartbeat_controller.orchestration.recovery.recover_runs`, whoever started
them) and starts the dispatcher. What another replica saved reaches it through the store follower
(``on_followed``): a run's cancel is delivered to the run's task, a workspace handed to a waiting
run wakes it, and anything saved nudges the dispatcher. When the lease is lost or the replica
stops, the dispatcher and the run tasks stop; the runs stay ``running`` for the next holder.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from heartbeat_controller.domain.run import Run
from heartbeat_controller.orchestration.recovery import recover_runs

if TYPE_CHECKING:
    from heartbeat_controller.orchestration.context import Orchestration
    from heartbeat_controller.orchestration.dispatcher import Dispatcher

__all__ = ["RunsLeader"]

log = logging.getLogger(__name__)

_CLOSE_SHARE = 1.0
"""Seconds the run tasks get to end once cancelled."""


class RunsLeader:
    """Starts and stops the controller's runs with the lease (a ``LeaderWork``)."""

    def __init__(self, orch: Orchestration, dispatcher: Dispatcher) -> None:
        self._orch = orch
        self._dispatcher = dispatcher
        self._loop = asyncio.get_running_loop()

    async def start(self) -> None:
        """Sweep, re-attach the running runs, dispatch; follow the other replicas' saves."""
        app: Any = self._orch.app
        revoked = await self._orch.store(app.revoke_board_trust)
        if revoked:
            log.warning("%d agents marked trusted by a board key run contained now", revoked)
        if self._followed not in app.on_followed:
            app.on_followed.append(self._followed)
        await recover_runs(self._orch, self._dispatcher)
        self._dispatcher.start()

    async def stop(self, timeout: float) -> None:
        """Stop dispatching and the run tasks (the runs stay ``running`` for the next holder)."""
        app: Any = self._orch.app
        if self._followed in app.on_followed:
            app.on_followed.remove(self._followed)
        await self._dispatcher.stop()
        await self._orch.close(min(_CLOSE_SHARE, max(timeout, 0.1)))

    def _followed(self, events: list[Any]) -> None:
        """Store thread: what other replicas saved reaches the runs and the dispatcher."""
        for event in events:
            run_id = str(event.originator_id)
            if isinstance(event, Run.CancelRequested):  # type: ignore[attr-defined]
                self._loop.call_soon_threadsafe(self._orch.request_cancel, run_id)
            elif isinstance(event, Run.WorkspaceLeased):  # type: ignore[attr-defined]
                self._loop.call_soon_threadsafe(self._orch.hand_over, [run_id])
        self._dispatcher.nudge_threadsafe()
