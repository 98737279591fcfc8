"""Endpoints of adapter slots (ARCHITECTURE §6; docs/design/heartbeat-runs.md): ``AcquireSlot``,
``LaunchAdapter``, ``KillAdapter``, ``ReleaseSlot`` (commands on this node's subjects),
``GetRunSlot``, ``GetRunLog`` and ``GetSlotHealth``. Every one is scoped to the principal's
company (another company's run answers 404). The reads ask the access model once, at their entry,
for the kind-level rule (ARCHITECTURE §5.1): a run's slot and log are runs' *read* (an agent key
reads only its agent's runs, a run token only its run: 403 otherwise), the slots' health is the
adapter slots' *read*, the board's (agents and the admin key are refused, 403). The commands are
the controller's (Clipyard itself). ``LaunchAdapter`` carries the run token: it is handed to the
adapter only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from contracts import heartbeat_subjects as hs
from contracts.slots import (
    AcquireSlot,
    AdapterLaunched,
    GetRunLog,
    GetRunSlot,
    GetSlotHealth,
    KillAdapter,
    LaunchAdapter,
    ReleaseSlot,
    RunLogSlice,
    RunSlot,
    SlotGrant,
    SlotHealth,
)
from contracts.subjects import on_node
from runtime_supervisor.adapters.process import read_range
from runtime_supervisor.domain import InvalidInputError
from runtime_supervisor.endpoints.common import SupervisorEndpoints
from servicekit.access import Access, Action, Resource
from servicekit.routes import Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.base import Accepted, ErrorReply, Ok
    from natsbus import RequestContext
    from runtime_supervisor.orchestration.context import Supervisor
    from runtime_supervisor.orchestration.slots.runtime import SlotRuntime
    from servicekit import ServiceRuntime

__all__ = ["SlotEndpoints"]


class SlotEndpoints(SupervisorEndpoints):
    """The slot endpoints (the supervisor's ``slots`` runtime must be set)."""

    def __init__(self, runtime: ServiceRuntime, sup: Supervisor) -> None:
        super().__init__(runtime, sup)
        slots: SlotRuntime | None = sup.slots
        assert slots is not None, "the slot runtime is set before the endpoints"
        self.slots = slots

    def routes(self) -> Sequence[Route]:
        return (
            Route("slot_acquire", hs.acquire_slot(self.node), self.acquire, AcquireSlot),
            Route("slot_launch", hs.launch_adapter(self.node), self.launch, LaunchAdapter),
            Route("slot_kill", hs.kill_adapter(self.node), self.kill, KillAdapter),
            Route("slot_release", hs.release_slot(self.node), self.release, ReleaseSlot),
            Route("slot_of_run", hs.SLOT_OF_RUN, self.of_run, GetRunSlot),
            Route("slot_run_log", hs.SLOT_RUN_LOG, self.run_log, GetRunLog),
            Route(
                "slot_run_log_here", on_node(hs.SLOT_RUN_LOG, self.node), self.run_log, GetRunLog
            ),
            Route("slot_health", hs.SLOT_HEALTH, self.health, GetSlotHealth),
        )

    async def acquire(self, c: AcquireSlot, ctx: RequestContext) -> SlotGrant:
        with self.acting(c.principal, "slot acquired", run_id=c.run_id):
            return await self.slots.acquire(c, Access.of(c.principal).scope())

    async def launch(
        self, c: LaunchAdapter, ctx: RequestContext
    ) -> AdapterLaunched | Ok | Accepted | ErrorReply:
        moved = await self._on_slot_node(c.run_id, hs.launch_adapter, c, ctx)
        if moved is not None:
            return moved
        with self.acting(c.principal, "adapter launched", run_id=c.run_id):
            return await self.slots.launch(c, Access.of(c.principal).scope())

    async def kill(
        self, c: KillAdapter, ctx: RequestContext
    ) -> RunSlot | Ok | Accepted | ErrorReply:
        moved = await self._on_slot_node(c.run_id, hs.kill_adapter, c, ctx)
        if moved is not None:
            return moved
        reason = c.reason or ("run timed out" if c.timed_out else "adapter killed")
        with self.acting(c.principal, reason, run_id=c.run_id):
            scope = Access.of(c.principal).scope()
            return await self.slots.kill(c.run_id, scope, timed_out=c.timed_out)

    async def release(
        self, c: ReleaseSlot, ctx: RequestContext
    ) -> Ok | Accepted | ErrorReply | None:
        moved = await self._on_slot_node(c.run_id, hs.release_slot, c, ctx)
        if moved is not None:
            return moved
        with self.acting(c.principal, "slot released", run_id=c.run_id):
            scope = Access.of(c.principal).scope()
            await self.slots.release(c.run_id, scope, "released by its run")
        return None

    async def _on_slot_node(
        self, run_id: str, subject_of: Callable[[str], str], message: Any, ctx: RequestContext
    ) -> Ok | Accepted | ErrorReply | None:
        """The answer of the node whose pool holds the run's slot, when that is not this one
        (None: serve here, also when the run has no slot yet)."""
        await self.runtime.follow()  # a slot granted by another node's supervisor a moment ago
        node = await self.sup.store(self._slot_node, run_id)
        return await self.on_its_node(node, subject_of, message, ctx, f"the slot of run {run_id}")

    def _slot_node(self, run_id: str) -> str | None:
        key = self.app.slots_by_run.get(run_id)
        return None if key is None else self.app.slots[key].node_id

    def _own_run(self, q: GetRunSlot | GetRunLog, action: str) -> str | None:
        """On the store's thread: refuse the kinds that may not read runs (403), another
        company's run (404) and, for an agent, a run not its own (403); answer the scope."""
        access = Access.of(q.principal)
        access.reach(Resource.RUN, Action.READ)
        scope = access.scope()
        slot = self.app.slot_of_run(scope, q.run_id)
        access.check_run(q.run_id, slot.agent_id, action)
        return scope

    async def of_run(self, q: GetRunSlot, ctx: RequestContext) -> RunSlot:
        scope = await self.sup.store(self._own_run, q, "read the slot of")
        found: RunSlot = await self.sup.store(self.app.run_slot_view, scope, q.run_id)
        return found

    async def run_log(
        self, q: GetRunLog, ctx: RequestContext
    ) -> RunLogSlice | Ok | Accepted | ErrorReply:
        await self.sup.store(self._own_run, q, "read the log of")
        here = partial(on_node, hs.SLOT_RUN_LOG)
        moved = await self._on_slot_node(q.run_id, here, q, ctx)
        if moved is not None:  # the run's log is on the node its adapter ran on
            return moved
        path = self.sup.settings.slot_run_dir(q.run_id) / "run.log"
        try:
            found = await asyncio.to_thread(read_range, path, q.offset, q.length)
        except ValueError as exc:
            raise InvalidInputError(
                f"Cannot read that part of the run's log: {exc}.", field="range"
            ) from None
        return RunLogSlice(
            run_id=q.run_id,
            offset=found.offset,
            length=found.length,
            size=found.size,
            text=found.text,
        )

    async def health(self, q: GetSlotHealth, ctx: RequestContext) -> list[SlotHealth]:
        access = Access.of(q.principal)
        access.reach(Resource.ADAPTER_SLOTS, Action.READ)  # agents (and the admin key): 403
        access.scope()
        return await self.slots.health()
