"""Use cases of adapter slots, on the store's thread: grant (idempotent per run, the pool
position chosen here so two grants never race), adapter started, adapter ended, released, and
the queries. They return frozen snapshots (:class:`SlotInfo`), never the live aggregates."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from contracts.slots import RunSlot, SlotGrant
from runtime_supervisor.domain import (
    AdapterSlot,
    InvalidInputError,
    NotFoundError,
    RunFinishedError,
    SandboxUnavailableError,
    SlotUnavailableError,
)
from runtime_supervisor.domain.slot_pool import free_index, slot_type_of
from runtime_supervisor.usecases.lookups import Lookups, visible

__all__ = ["SlotInfo", "SlotUseCases"]


@dataclass(frozen=True, kw_only=True)
class SlotInfo:
    """A snapshot of one slot, for the orchestration."""

    slot_id: str
    run_id: str
    company_id: str
    agent_id: str
    slot_type: str
    index: int | None
    trusted: bool
    contained: bool
    sandbox: str
    state: str
    pid: int | None
    pgid: int | None
    start_time: int | None
    cwd: str | None
    log_path: str | None
    end: str | None
    workspace_id: str | None = None
    node_id: str | None = None

    @property
    def held(self) -> bool:
        """Whether it still holds its pool position."""
        return self.state != "released"

    def grant(self) -> SlotGrant:
        """The ``AcquireSlot`` answer."""
        return SlotGrant(
            slot_id=self.slot_id,
            type=self.slot_type,  # type: ignore[arg-type]
            index=self.index,
            contained=self.contained,
            sandbox=self.sandbox,  # type: ignore[arg-type]
        )


def _info(slot: AdapterSlot) -> SlotInfo:
    return SlotInfo(
        slot_id=str(slot.id),
        run_id=slot.run_id,
        company_id=slot.company_id,
        agent_id=slot.agent_id,
        slot_type=slot.slot_type,
        index=slot.index,
        trusted=slot.trusted,
        contained=slot.contained,
        sandbox=slot.sandbox,
        state=slot.state,
        pid=slot.pid,
        pgid=slot.pgid,
        start_time=slot.start_time,
        cwd=slot.cwd,
        log_path=slot.log_path,
        end=slot.end,
        workspace_id=slot.workspace_id,
        node_id=slot.node_id,
    )


def _view(slot: AdapterSlot) -> RunSlot:
    return RunSlot(
        slot_id=str(slot.id),
        run_id=slot.run_id,
        type=slot.slot_type,  # type: ignore[arg-type]
        state=slot.state,
        end=slot.end,  # type: ignore[arg-type]
        exit_code=slot.exit_code,
        signal=slot.signal,
        started_at=slot.started_at,
        finished_at=slot.finished_at,
        usage=slot.usage,
        result=slot.result,
        stdout_excerpt=slot.stdout_excerpt,
        stderr_excerpt=slot.stderr_excerpt,
        log_bytes=slot.log_bytes,
        error=slot.error,
    )


class SlotUseCases(Lookups):
    """Record and read adapter slots."""

    def _run_slot(self, scope_company_id: str | None, run_id: str) -> AdapterSlot:
        key = self.slots_by_run.get(run_id)
        slot = self.slots.get(key) if key else None
        if slot is None or not visible(slot.company_id, scope_company_id):
            raise NotFoundError(f"Run {run_id} has no adapter slot.", runId=run_id)
        return slot

    def acquire_slot(
        self,
        scope_company_id: str | None,
        *,
        run_id: str,
        agent_id: str,
        adapter_type: str,
        trusted: bool,
        capacity: int,
        sandbox: str | None,
        sandbox_detail: str,
        ttl: float,
    ) -> SlotInfo:
        """Grant a slot to the run, or answer its live grant again.

        Raises:
            NotFoundError: The run (or its slot) is another company's.
            RunFinishedError: The controller said the run finished.
            SandboxUnavailableError: Untrusted, local, and no containment here.
            SlotUnavailableError: Every ``local_stdio`` slot is held.
        """
        run = self.copy_of("run", run_id)
        if run is not None and not visible(run.company_id, scope_company_id):
            raise NotFoundError(f"There is no run {run_id}.", runId=run_id)
        key = self.slots_by_run.get(run_id)
        if key is not None:
            current = self.slots[key]
            if not visible(current.company_id, scope_company_id):
                raise NotFoundError(f"There is no run {run_id}.", runId=run_id)
            if current.held:
                return _info(current)
        if run is not None and run.get("status") not in (None, "queued", "running"):
            raise RunFinishedError(f"Run {run_id} has finished: it gets no slot.", runId=run_id)
        company_id = scope_company_id or (run.company_id if run is not None else None)
        if not company_id:
            raise InvalidInputError("The run's company is unknown.", field="principal.companyId")
        slot_type = slot_type_of(adapter_type)
        contained = not trusted and slot_type == "local_stdio"
        if contained and sandbox is None:
            raise SandboxUnavailableError(sandbox_detail, runId=run_id, agentId=agent_id)
        index: int | None = None
        if slot_type == "local_stdio":
            held = (
                s.index
                for s in self.slots.values()
                if s.held and s.slot_type == "local_stdio" and self.is_mine(s.node_id)
            )
            index = free_index(capacity, held)
            if index is None:
                raise SlotUnavailableError(
                    f"All {capacity} local adapter slots are in use; try again shortly.",
                    capacity=capacity,
                )
        now = self.now()
        slot = AdapterSlot(
            slot_id=str(uuid.uuid4()),
            company_id=company_id,
            for_run=run_id,
            agent_id=agent_id,
            slot_type=slot_type,
            index=index,
            trusted=trusted,
            contained=contained,
            sandbox=(sandbox or "none") if contained else "none",
            granted_at=now,
            expires_at=now + timedelta(seconds=ttl),
            node_id=self.node_id,
        )
        self.save(slot)
        return _info(self.slots[str(slot.id)])

    def slot_of_run(self, scope_company_id: str | None, run_id: str) -> SlotInfo:
        """The run's latest slot (NotFoundError: none, or another company's)."""
        return _info(self._run_slot(scope_company_id, run_id))

    def run_slot_view(self, scope_company_id: str | None, run_id: str) -> RunSlot:
        """``GetRunSlot``."""
        return _view(self._run_slot(scope_company_id, run_id))

    def record_adapter_started(self, slot_id: str, **fields: Any) -> SlotInfo:
        """The adapter started (``AdapterSlot.start``'s fields)."""
        slot: AdapterSlot = self.load(slot_id)
        slot.start(started_at=self.now(), **fields)
        self.save(slot)
        return _info(self.slots[slot_id])

    def record_adapter_end(self, slot_id: str, end: str, **outcome: Any) -> bool:
        """The adapter ended; False when its end was recorded already (or it was released)."""
        slot: AdapterSlot = self.load(slot_id)
        if not slot.finish(end=end, finished_at=self.now(), **outcome):
            return False
        self.save(slot)
        return True

    def release_slot_record(self, slot_id: str, reason: str) -> bool:
        """Free the slot; False when it was free already."""
        slot: AdapterSlot = self.load(slot_id)
        if not slot.release(released_at=self.now(), reason=reason):
            return False
        self.save(slot)
        return True

    def held_slots(self) -> list[SlotInfo]:
        """Every slot of this node still holding its position."""
        return [_info(s) for s in self.slots.values() if s.held and self.is_mine(s.node_id)]

    def slots_in_use(self) -> dict[str, int]:
        """Held slots of this node by type."""
        counts = {"local_stdio": 0, "remote_http": 0}
        for slot in self.slots.values():
            if slot.held and self.is_mine(slot.node_id):
                counts[slot.slot_type] = counts.get(slot.slot_type, 0) + 1
        return counts
