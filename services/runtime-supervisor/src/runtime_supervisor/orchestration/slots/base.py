"""What the parts of the slots' orchestration share: the running supervisor and its launcher,
the adapters being watched, and recording an adapter's end."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runtime_supervisor.orchestration.context import as_system
from runtime_supervisor.orchestration.egress import let_go

if TYPE_CHECKING:
    from runtime_supervisor.adapters.containment.identities import Identity
    from runtime_supervisor.adapters.containment.launcher import Launcher
    from runtime_supervisor.adapters.slots.adapter import AdapterOutcome, AdapterProcess
    from runtime_supervisor.orchestration.context import Supervisor
    from runtime_supervisor.usecases.slots import SlotInfo

__all__ = ["Running", "SlotBase"]


@dataclass(kw_only=True)
class Running:
    """An adapter being watched: its slot, its watching task, its process (a local one) and
    why it is being stopped (once it is)."""

    slot_id: str
    task: asyncio.Task[None]
    adapter: AdapterProcess | None = None
    reason: str | None = None


@dataclass(kw_only=True)
class SlotBase:
    """The slots of one running supervisor: what every part of their orchestration uses."""

    sup: Supervisor
    launcher: Launcher
    running: dict[str, Running] = field(default_factory=dict)
    """Run id -> its adapter being watched."""
    expiries: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    def _identity(self, info: SlotInfo) -> Identity | None:
        """The company's identity of a contained slot (None: a trusted one)."""
        if not info.contained:
            return None
        _tools, identities, _cgroups = self.launcher.require()
        return identities.of(info.company_id)

    def _unit_name(self, run_id: str) -> str:
        return f"run-{run_id}"

    async def _let_go(self, workspace_id: str | None, run_id: str) -> None:
        folder = self.launcher.namespace_folder(workspace_id or run_id)
        if folder is not None:
            await asyncio.to_thread(let_go, folder, run_id)

    async def _record(self, info: SlotInfo, outcome: AdapterOutcome) -> None:
        with as_system(f"adapter {outcome.end}", run_id=info.run_id):
            await self.sup.store(
                lambda: self.sup.app.record_adapter_end(
                    info.slot_id,
                    outcome.end,
                    exit_code=outcome.exit_code,
                    signal=outcome.signal,
                    usage=outcome.usage,
                    result=outcome.result,
                    stdout_excerpt=outcome.stdout_excerpt,
                    stderr_excerpt=outcome.stderr_excerpt,
                    log_bytes=outcome.log_bytes,
                    error=outcome.error,
                    group_gone=outcome.group_gone,
                )
            )

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
