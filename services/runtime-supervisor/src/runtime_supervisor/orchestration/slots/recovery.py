"""A restarted supervisor's slots: grants never launched are freed; adapters left running are
recorded ``detached`` (what is left of their group killed, the worktree handed back); slots of
finished runs are freed."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from runtime_supervisor.adapters.process import last_output, stop_group
from runtime_supervisor.adapters.slots.adapter import ADAPTER_GRACE, AdapterOutcome
from runtime_supervisor.adapters.slots.local import (
    Placement,
    give_back,
    placement_of,
    recovered_layout,
)
from runtime_supervisor.domain import InvalidInputError, NotFoundError
from runtime_supervisor.orchestration.context import as_system
from runtime_supervisor.orchestration.slots.base import SlotBase

if TYPE_CHECKING:
    from runtime_supervisor.usecases.slots import SlotInfo

__all__ = ["Recovery"]

_LOG_TAIL = 64 * 1024


class Recovery(SlotBase):
    """Restart recovery of the slots."""

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


def _log_tail(path: Path) -> tuple[str, int | None]:
    """The last 64 KiB of a run's log and its size (None without a log)."""
    try:
        size = path.stat().st_size
    except OSError:
        return "", None
    return last_output(path, _LOG_TAIL), size
