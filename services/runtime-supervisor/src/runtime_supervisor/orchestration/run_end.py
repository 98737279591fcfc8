"""A finished run's host work, on the nodes that hold it (docs/scale-out.md, "Worker nodes").

The controller's ``run.finished`` reaches one supervisor (the inbox is the service's, shared by
every node's supervisor). Its releases are recorded there, in the one store; what they mean on a
host (a released service stopped or given its idle timer, the run's slot freed and its adapter
killed) is done by the node that holds each: this node does its own, and tells each other node
(``ws.cmd.runtime_service.run_ended.<node>``) the run and the services of its it released. A node
that does not answer loses nothing: when its supervisor starts, adoption handles the services no
run holds any more and slot recovery frees the slots of finished runs.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from contracts.base import Actor, ErrorReply, Principal
from contracts.runtime_commands import RunEndedHere
from contracts.runtime_subjects import run_ended
from runtime_supervisor.domain import NotFoundError
from runtime_supervisor.orchestration.runs import after_release

if TYPE_CHECKING:
    from runtime_supervisor.domain import ServiceRecord
    from runtime_supervisor.inbox import RunFinishedHook
    from runtime_supervisor.orchestration.context import Supervisor
    from runtime_supervisor.usecases.services import Release
    from servicekit import ServiceRuntime

__all__ = ["RunEnd"]

log = logging.getLogger(__name__)
_TELL_TIMEOUT = 10.0
_SYSTEM = Principal(company_id=None, actor=Actor(type="system", id="runtime-supervisor"))


class RunEnd:
    """Where a finished run's slot and released services are acted on."""

    def __init__(self, sup: Supervisor, runtime: ServiceRuntime) -> None:
        self.sup = sup
        self.runtime = runtime

    def hook(self, loop: asyncio.AbstractEventLoop) -> RunFinishedHook:
        """The inbox's ``on_run_finished``: called on the store's thread, it hands the releases
        over to the event loop."""

        def finished(run_id: str, releases: list[Release]) -> None:
            freed = [record for record, no_leases_left in releases if no_leases_left]
            loop.call_soon_threadsafe(
                lambda: self.sup.spawn(self._split(run_id, freed), name=f"run-ended-{run_id}")
            )

        return finished

    async def here(self, run_id: str, service_ids: list[str]) -> None:
        """This node's part: its released services acted on, its slot of the run freed (on
        read models that first had what the node that heard of the run saved)."""
        await self.sup.adopted.wait()  # a service left running is adopted before it is stopped
        await self.runtime.follow()
        for service_id in service_ids:
            try:
                record: ServiceRecord = await self.sup.store(
                    self.sup.app.service_record, None, service_id
                )
            except NotFoundError:
                continue
            if self.sup.app.is_mine(record.node_id):
                after_release(self.sup, record)
        slot = await self.sup.store(self._slot_of, run_id)
        if self.sup.slots is not None and slot is not None and self.sup.app.is_mine(slot[0]):
            self.sup.slots.run_finished(run_id)

    async def _split(self, run_id: str, freed: list[ServiceRecord]) -> None:
        app = self.sup.app
        await self.runtime.follow()  # a slot another node granted a moment ago
        others: dict[str, list[str]] = {}
        for record in freed:  # one from before worker nodes is the first registered node's
            if not app.is_mine(record.node_id):
                others.setdefault(record.node_id or app.first_node or "", []).append(record.id)
        slot = await self.sup.store(self._slot_of, run_id)
        if slot is not None and not app.is_mine(slot[0]):
            others.setdefault(slot[0] or app.first_node or "", [])
        mine = [record.id for record in freed if app.is_mine(record.node_id)]
        await asyncio.gather(
            self.here(run_id, mine),
            *(self._tell(node, run_id, ids) for node, ids in others.items() if node),
        )

    def _slot_of(self, run_id: str) -> tuple[str | None] | None:
        """The node of the run's slot, as a 1-tuple (None: the run has no slot)."""
        key = self.sup.app.slots_by_run.get(run_id)
        return None if key is None else (self.sup.app.slots[key].node_id,)

    async def _tell(self, node: str, run_id: str, service_ids: list[str]) -> None:
        command = RunEndedHere(principal=_SYSTEM, run_id=run_id, released_service_ids=service_ids)
        try:
            reply = await self.runtime.bus.request(run_ended(node), command, timeout=_TELL_TIMEOUT)
        except Exception:
            log.warning("run %s ended: node %s not told (it catches up at its start)", run_id, node)
            return
        if isinstance(reply, ErrorReply):
            log.warning(
                "run %s ended: node %s answered %s (it catches up at its start)",
                run_id,
                node,
                reply.code,
            )
