"""Stopping runtime service instances (reference §6.3; DECISIONS 8): SIGTERM to the whole process
group, the grace period, SIGKILL, a check that nothing of the group survives, then ``stopped``
with the exit status the wrapper wrote and the port released. Starts and stops of one service
identity are serialized by :func:`lock_key`; an instance that already ended is left as is.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runtime_supervisor.domain import ServiceRecord
from runtime_supervisor.process import last_output, read_status, stop_group
from runtime_supervisor.watchers import forget, log_path

if TYPE_CHECKING:
    from runtime_supervisor.context import Supervisor

__all__ = ["Stopped", "lock_key", "stop_instance", "stop_locked", "stop_many"]


@dataclass(frozen=True, kw_only=True)
class Stopped:
    """A stopped instance; ``survivors`` are pids still running after SIGKILL (then it stays
    live as recorded)."""

    record: ServiceRecord
    survivors: list[int] = field(default_factory=list)


def lock_key(
    target_key: str, command_id: str | None, scope_id: str | None, reuse: str | None
) -> str:
    """The key serializing starts and stops of one service identity."""
    return f"service:{reuse}" if reuse else f"service:{target_key}|{command_id}|{scope_id}"


def _record_key(record: ServiceRecord) -> str:
    return lock_key(record.target_key, record.workspace_command_id, record.scope_id,
                    record.reuse_key)  # fmt: skip


async def stop_instance(sup: Supervisor, record: ServiceRecord, *, reason: str) -> Stopped:
    """Stop one instance (serialized with starts of its identity); an ended one is left as is.

    Args:
        sup: The supervisor.
        record: The instance.
        reason: Its ``stopReason`` (``manual stop``, ``run finished``, ``idle timeout``, ...).
    """
    async with sup.locks.hold(_record_key(record)):
        return await stop_locked(sup, record, reason=reason)


async def stop_locked(sup: Supervisor, record: ServiceRecord, *, reason: str) -> Stopped:
    """Stop one instance; the caller holds the lock of its identity."""
    current: ServiceRecord = await sup.store(sup.app.service_record, None, record.id)
    if not current.live:
        return Stopped(record=current)
    sup.stopping.add(current.id)
    sup.cancel_idle_timer(current.id)
    try:
        if current.pgid is not None:
            outcome = await stop_group(current.pgid, grace=sup.settings.stop_grace)
            if outcome.survivors:
                return Stopped(record=current, survivors=outcome.survivors)
        status = read_status(Path(current.run_dir)) if current.run_dir else None
        path = log_path(current)
        ended: ServiceRecord = await sup.store(
            sup.app.mark_stopped, current.id, stop_reason=reason,
            exit_code=status.code if status else None,
            exit_signal=status.signal if status else None,
            last_output=last_output(path) if path is not None else None,
        )  # fmt: skip
    finally:
        sup.stopping.discard(current.id)
    forget(sup, ended)
    return Stopped(record=ended)


async def stop_many(sup: Supervisor, records: list[ServiceRecord], *, reason: str) -> list[Stopped]:
    """Stop instances in parallel."""
    return list(await asyncio.gather(*(stop_instance(sup, r, reason=reason) for r in records)))
