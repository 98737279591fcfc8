"""Stage 5, ``result_collection``: wait for the adapter's end and decide the run's outcome.

The end comes from the supervisor's ``slot.adapter_finished.v1`` (the inbox hands it to the
run's channel). A cancel requested meanwhile sends ``KillAdapter`` (the end arrives ``killed``);
the controller's backstop at the deadline plus ``kill_grace`` sends ``KillAdapter{timedOut}``,
and the run ends ``timed_out`` even when the supervisor does not answer. After a kill the event
is awaited ``end_wait`` seconds more; without it, the kill's answer (the slot) is the end, and
its exit code, usage, result and excerpts are recorded on the run as the event's would be.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contracts.slots import KillAdapter, RunSlot
from heartbeat_controller.orchestration.ports import PortError
from heartbeat_controller.orchestration.timers import backstop_at, seconds_until

if TYPE_CHECKING:
    from datetime import datetime

    from heartbeat_controller.orchestration.context import Orchestration
    from heartbeat_controller.orchestration.work import RunWork

__all__ = ["Outcome", "collect_end", "outcome_of_end", "record_slot_end"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """How a run ends: its status, error code and message."""

    status: str
    error_code: str | None = None
    error: str | None = None


def outcome_of_end(end: Any, *, cancelled: bool = False, timed_out: bool = False) -> Outcome:
    """The outcome of an adapter's end (``SlotAdapterFinished`` or a finished ``RunSlot``).

    Args:
        end: The end, or None when none was heard.
        cancelled: A cancel was requested (wins over everything).
        timed_out: The controller's backstop fired.
    """
    if cancelled:
        return Outcome("cancelled", "cancelled", "the run was cancelled")
    kind = getattr(end, "end", None)
    if timed_out or kind == "timed_out":
        return Outcome("timed_out", "timed_out", "the adapter ran past its timeout")
    exit_code = getattr(end, "exit_code", None)
    error = getattr(end, "error", None)
    if kind == "exited" and exit_code == 0:
        return Outcome("succeeded")
    if kind == "detached":
        return Outcome(
            "failed", "process_detached", error or "the adapter was lost with its supervisor"
        )
    if kind == "launch_failed":
        return Outcome("failed", "adapter_launch_failed", error or "the adapter did not start")
    if kind == "exited":
        return Outcome("failed", "adapter_failed", error or f"the adapter exited with {exit_code}")
    if kind == "killed":
        signal = getattr(end, "signal", None)
        return Outcome("failed", "adapter_failed", error or f"the adapter was killed ({signal})")
    return Outcome("failed", "adapter_failed", error or "the adapter's end is unknown")


async def record_slot_end(orch: Orchestration, work: RunWork, slot: RunSlot) -> None:
    """Record a finished slot's end on the run (its exit, usage and excerpts) when the end event
    did not come; a failure is logged (the run still ends with the outcome decided)."""
    try:
        await orch.store(orch.app.record_slot_end, slot)
    except Exception:
        log.exception("run %s: the slot's end was not recorded", work.run_id)


async def _kill(orch: Orchestration, work: RunWork, *, timed_out: bool) -> RunSlot | None:
    reason = "run timeout (controller backstop)" if timed_out else "run cancelled"
    command = KillAdapter(
        principal=work.principal, run_id=work.run_id, timed_out=timed_out, reason=reason
    )
    try:
        return await orch.ports.supervisor.kill_adapter(command, work.node)
    except PortError as failed:
        log.warning("run %s: kill refused: %s (%s)", work.run_id, failed.code, failed.message)
    except Exception:
        log.exception("run %s: kill failed", work.run_id)
    return None


async def collect_end(orch: Orchestration, work: RunWork, deadline: datetime) -> Outcome:
    """Wait for the run's adapter to end (killing it on cancel or at the backstop).

    Args:
        orch: The orchestration.
        work: The run (its channel receives the end and the cancel).
        deadline: When the supervisor's own timeout kills the adapter.

    Returns:
        The run's outcome.
    """
    channel, settings = work.channel, orch.settings
    backstop = backstop_at(deadline, settings.kill_grace)
    killed: str | None = None
    answer: RunSlot | None = None
    loop = asyncio.get_running_loop()
    give_up = 0.0
    cancel_wait = asyncio.ensure_future(channel.cancel.wait())
    try:
        while not channel.end.done():
            if killed is None:
                timeout = seconds_until(backstop, settings.clock())
                waits: set[asyncio.Future[Any]] = {channel.end, cancel_wait}
            else:
                timeout = max(give_up - loop.time(), 0.0)
                waits = {channel.end}
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if channel.end.done():
                break
            if killed is not None:
                break  # killed, and no end event in time: the kill's answer is the end
            killed = "cancel" if channel.cancel.is_set() else "timeout"
            answer = await _kill(orch, work, timed_out=killed == "timeout")
            give_up = loop.time() + settings.end_wait
    finally:
        cancel_wait.cancel()
    end: Any = channel.end.result() if channel.end.done() else None
    if end is None and answer is not None and answer.state in ("finished", "released"):
        end = answer
        await record_slot_end(orch, work, answer)
    timed_out = killed == "timeout" and (end is None or getattr(end, "end", None) != "exited")
    return outcome_of_end(end, cancelled=channel.cancel.is_set(), timed_out=timed_out)
