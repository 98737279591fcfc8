"""Stage 6 of a run, whatever its outcome: the slot released (if one was granted), then the run
finished (``finish_run``: its workspace lease released, ``RunFinished`` last, retried until
recorded), and the next waiting run handed the workspace."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from contracts.slots import ReleaseSlot
from heartbeat_controller.domain.stage_detail import CleanupDetail
from heartbeat_controller.orchestration.ports import PortError
from heartbeat_controller.orchestration.timers import slot_backoff

if TYPE_CHECKING:
    from heartbeat_controller.orchestration.collect import Outcome
    from heartbeat_controller.orchestration.context import Orchestration
    from heartbeat_controller.orchestration.work import RunWork

__all__ = ["cleanup"]

log = logging.getLogger(__name__)


async def cleanup(orch: Orchestration, work: RunWork, outcome: Outcome) -> None:
    """Stage 6, whatever the outcome: the slot released (if granted), the run finished (its
    workspace lease released, ``RunFinished`` last), the next waiting run handed the workspace.

    Args:
        orch: The orchestration.
        work: The run.
        outcome: How it ends.
    """
    app, run_id = orch.app, work.run_id
    detail = CleanupDetail(status=outcome.status, error_code=outcome.error_code)
    try:
        await orch.store(app.record_stage, run_id, "cleanup", detail)
        work.stage = "cleanup"
    except Exception:
        log.exception("run %s: the cleanup stage was not recorded", run_id)
    if work.slot_granted:
        await _release_slot(orch, work)
    handed = await _finish(orch, run_id, outcome)
    orch.close_channel(run_id)
    orch.hand_over(handed)
    orch.nudge()


async def _finish(orch: Orchestration, run_id: str, outcome: Outcome) -> list[str]:
    """``finish_run``, retried with backoff until it is recorded: a run never stays
    ``running`` without its task. A stop of the controller cancels this; the next start's
    recovery then finishes the run."""
    s = orch.settings
    attempt = 0
    while True:
        try:
            handed: list[str] = await orch.store(
                orch.app.finish_run,
                run_id,
                outcome.status,
                error_code=outcome.error_code,
                error=outcome.error,
            )
            return list(handed or [])
        except Exception:
            log.exception("run %s: finishing failed (attempt %d); retrying", run_id, attempt + 1)
        await asyncio.sleep(
            slot_backoff(min(attempt, 30), s.finish_retry_initial, s.finish_retry_max)
        )
        attempt += 1


async def _release_slot(orch: Orchestration, work: RunWork) -> None:
    command = ReleaseSlot(principal=work.principal, run_id=work.run_id)
    for attempt in range(3):
        try:
            await orch.ports.supervisor.release_slot(command, work.node)
            return
        except PortError as failed:
            if failed.code == "not_found":
                return
            log.warning(
                "run %s: slot release refused: %s (%s)", work.run_id, failed.code, failed.message
            )
        except Exception:
            log.exception("run %s: slot release failed", work.run_id)
        await asyncio.sleep(0.2 * (attempt + 1))
