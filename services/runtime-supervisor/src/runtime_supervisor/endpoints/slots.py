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
from typing import TYPE_CHECKING

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
from runtime_supervisor.domain import InvalidInputError
from runtime_supervisor.process import read_range
from servicekit.access import Access, Action, Resource

if TYPE_CHECKING:
    from natsbus import RequestContext
    from runtime_supervisor.endpoints.common import Endpoints
    from runtime_supervisor.slots.runtime import SlotRuntime

__all__ = ["register_slots"]


async def register_slots(e: Endpoints) -> None:
    """Add the slot endpoints (the supervisor's ``slots`` runtime must be set)."""
    sup, app = e.sup, e.app
    slots: SlotRuntime | None = sup.slots
    assert slots is not None, "the slot runtime is set before the endpoints"

    async def acquire(c: AcquireSlot, ctx: RequestContext) -> SlotGrant:
        with e.acting(c.principal, "slot acquired", run_id=c.run_id):
            return await slots.acquire(c, Access.of(c.principal).scope())

    async def launch(c: LaunchAdapter, ctx: RequestContext) -> AdapterLaunched:
        with e.acting(c.principal, "adapter launched", run_id=c.run_id):
            return await slots.launch(c, Access.of(c.principal).scope())

    async def kill(c: KillAdapter, ctx: RequestContext) -> RunSlot:
        reason = c.reason or ("run timed out" if c.timed_out else "adapter killed")
        with e.acting(c.principal, reason, run_id=c.run_id):
            scope = Access.of(c.principal).scope()
            return await slots.kill(c.run_id, scope, timed_out=c.timed_out)

    async def release(c: ReleaseSlot, ctx: RequestContext) -> None:
        with e.acting(c.principal, "slot released", run_id=c.run_id):
            await slots.release(c.run_id, Access.of(c.principal).scope(), "released by its run")

    def own_run(q: GetRunSlot | GetRunLog, action: str) -> str | None:
        """On the store's thread: refuse the kinds that may not read runs (403), another
        company's run (404) and, for an agent, a run not its own (403); answer the scope."""
        access = Access.of(q.principal)
        access.reach(Resource.RUN, Action.READ)
        scope = access.scope()
        slot = app.slot_of_run(scope, q.run_id)
        access.check_run(q.run_id, slot.agent_id, action)
        return scope

    async def of_run(q: GetRunSlot, ctx: RequestContext) -> RunSlot:
        scope = await sup.store(own_run, q, "read the slot of")
        found: RunSlot = await sup.store(app.run_slot_view, scope, q.run_id)
        return found

    async def run_log(q: GetRunLog, ctx: RequestContext) -> RunLogSlice:
        await sup.store(own_run, q, "read the log of")
        path = sup.settings.slot_run_dir(q.run_id) / "run.log"
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

    async def health(q: GetSlotHealth, ctx: RequestContext) -> list[SlotHealth]:
        access = Access.of(q.principal)
        access.reach(Resource.ADAPTER_SLOTS, Action.READ)  # agents (and the admin key): 403
        access.scope()
        return await slots.health()

    await e.add("slot_acquire", hs.acquire_slot(e.node), acquire, AcquireSlot)
    await e.add("slot_launch", hs.launch_adapter(e.node), launch, LaunchAdapter)
    await e.add("slot_kill", hs.kill_adapter(e.node), kill, KillAdapter)
    await e.add("slot_release", hs.release_slot(e.node), release, ReleaseSlot)
    await e.add("slot_of_run", hs.SLOT_OF_RUN, of_run, GetRunSlot)
    await e.add("slot_run_log", hs.SLOT_RUN_LOG, run_log, GetRunLog)
    await e.add("slot_health", hs.SLOT_HEALTH, health, GetSlotHealth)
