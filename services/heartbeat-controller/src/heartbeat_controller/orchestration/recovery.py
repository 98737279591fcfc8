"""Restart recovery (controller start, before serving): no run stays ``running`` without a task.

For every run left ``running`` the supervisor is asked for the run's slot (``GetRunSlot``):

- none, or granted but never launched: the run ends ``failed`` with ``process_detached``
  (cleanup; the slot released when one was granted);
- running: the run is re-attached: its backstop timer re-armed (the slot's start plus the agent's
  timeout), the end awaited from the inbox as for any run;
- finished (or released): the end is collected (the inbox's event when it comes at once, else
  the slot's answer, recorded on the run) and the run cleaned up.

A supervisor that does not answer is asked again, with backoff, by the run's own task. Queued runs
stay queued: the dispatcher's first pass starts them again.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from contracts.base import Principal
from contracts.slots import GetRunSlot, RunSlot
from heartbeat_controller.orchestration.cleanup import cleanup
from heartbeat_controller.orchestration.collect import (
    Outcome,
    collect_end,
    outcome_of_end,
    record_slot_end,
)
from heartbeat_controller.orchestration.ports import CONTROLLER_ACTOR, PortError
from heartbeat_controller.orchestration.work import RunWork

if TYPE_CHECKING:
    from heartbeat_controller.orchestration.context import Orchestration
    from heartbeat_controller.orchestration.dispatcher import Dispatcher

__all__ = ["recover_runs"]

log = logging.getLogger(__name__)

FIRST_PHASE = 20.0
"""Seconds the start waits for the recovered runs' first answers before serving anyway."""
EARLY_END = 2.0
"""Seconds a finished slot's end event is awaited from the inbox (it may be recorded already)."""
DETACHED = "the controller stopped before the adapter was launched"


async def _slot_of(orch: Orchestration, work: RunWork) -> RunSlot | None:
    """The run's slot; asks again while the supervisor does not answer."""
    delay = 0.5
    while True:
        try:
            return await orch.ports.supervisor.get_run_slot(
                GetRunSlot(principal=work.principal, run_id=work.run_id)
            )
        except PortError as failed:
            if failed.code not in ("timeout", "service_unavailable"):
                raise
            log.warning("run %s: supervisor unavailable for recovery; retrying", work.run_id)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 10.0)


async def _timeout_of(orch: Orchestration, work: RunWork) -> int:
    """The agent's adapter timeout (the default when the agent is gone)."""
    principal = Principal(company_id=work.company_id, actor=CONTROLLER_ACTOR)
    try:
        agent: Any = await orch.store(orch.app.get_agent, principal, work.agent_id)
        config = agent.adapter_config or {}
        value = config.get("timeoutSec", config.get("timeout_sec"))
        return int(value) if value else orch.settings.default_timeout_sec
    except Exception:
        return orch.settings.default_timeout_sec


async def _deadline_of(orch: Orchestration, work: RunWork, slot: RunSlot) -> datetime:
    """The adapter's deadline as recorded at its launch, else its start plus the agent's
    timeout."""
    try:
        record: Any = await orch.store(orch.app.run_record, work.run_id)
        launch = getattr(record, "launch", None) or {}
        if launch.get("deadline") is not None:
            deadline: datetime = launch["deadline"]
            return deadline
    except Exception:
        log.warning("run %s: no launch record; using the agent's timeout", work.run_id)
    started = slot.started_at or orch.settings.clock()
    return started + timedelta(seconds=await _timeout_of(orch, work))


async def _recover(orch: Orchestration, work: RunWork, decided: asyncio.Event) -> None:
    try:
        slot = await _slot_of(orch, work)
    except Exception as error:
        log.exception("run %s: recovery could not ask for its slot", work.run_id)
        decided.set()
        outcome = Outcome("failed", "process_detached", f"recovery failed: {error}")
        await cleanup(orch, work, outcome)
        return
    decided.set()
    if slot is None or slot.state == "granted":
        work.slot_granted = slot is not None
        await cleanup(orch, work, Outcome("failed", "process_detached", DETACHED))
        return
    work.slot_granted = slot.state != "released"
    work.launched = True
    if slot.state == "running":
        deadline = await _deadline_of(orch, work, slot)
        work.stage = "result_collection"
        outcome = await collect_end(orch, work, deadline)
    else:
        channel = work.channel
        if not channel.end.done():
            await asyncio.wait({channel.end}, timeout=EARLY_END)
        end: Any = channel.end.result() if channel.end.done() else slot
        if end is slot:
            await record_slot_end(orch, work, slot)
        outcome = outcome_of_end(end, cancelled=channel.cancel.is_set())
    await cleanup(orch, work, outcome)


async def recover_runs(orch: Orchestration, dispatcher: Dispatcher) -> list[str]:
    """Give every run left ``running`` a task (see the module's docstring).

    Args:
        orch: The orchestration (its channels receive the ends the inbox delivers).
        dispatcher: Starts the runs' tasks.

    Returns:
        The ids of the runs recovered.
    """
    runs: list[Any] = await orch.store(orch.app.running_runs)
    decisions: list[asyncio.Event] = []
    for view in runs:
        channel = orch.open(view.id)
        if view.cancel_requested:
            channel.cancel.set()
        work = RunWork(
            run_id=view.id,
            company_id=view.company_id,
            agent_id=view.agent_id,
            issue_id=view.issue_id,
            workspace_id=view.execution_workspace_id,
            channel=channel,
            stage=view.stage,
        )
        decided = asyncio.Event()
        decisions.append(decided)

        async def body(
            orch: Orchestration, work: RunWork, decided: asyncio.Event = decided
        ) -> None:
            await _recover(orch, work, decided)

        dispatcher.start_work(work, body=body)
    if decisions:
        waits = [asyncio.ensure_future(d.wait()) for d in decisions]
        _, pending = await asyncio.wait(waits, timeout=FIRST_PHASE)
        for task in pending:
            task.cancel()
        log.info("runs recovered", extra={"count": len(runs)})
    return [view.id for view in runs]
