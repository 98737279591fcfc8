"""Idle timers of runtime service instances (reference §6.7).

A live instance that no run holds and whose stop policy is ``idle_timeout`` stops after
``idleSeconds`` (default 1800, at least 1) unless it is used meanwhile: a run's lease disarms the
timer, a use without a lease (a reuse by a start) re-arms it. The timer's stop takes the
identity's lock and checks again that it is still the armed timer and that no run holds the
instance; a leased instance keeps running and nothing is re-armed (its lease's release arms the
next timer).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from runtime_supervisor.orchestration.context import as_system
from runtime_supervisor.orchestration.stopping import instance_lock_key, stop_locked

if TYPE_CHECKING:
    from datetime import datetime

    from runtime_supervisor.domain import ServiceRecord
    from runtime_supervisor.orchestration.context import Supervisor

__all__ = ["DEFAULT_IDLE_SECONDS", "arm_idle_timer", "unleased_policy"]

DEFAULT_IDLE_SECONDS = 1800


def unleased_policy(record: ServiceRecord) -> tuple[str, float]:
    """What to do with a live instance no run holds: ``stop``, ``idle`` (with its seconds) or
    ``keep`` (reference §6.7)."""
    policy = record.stop_policy or {}
    kind = policy.get("type") or "manual"
    if record.lifecycle == "ephemeral" or kind == "on_run_finish":
        return "stop", 0.0
    if kind == "idle_timeout":
        seconds = policy.get("idleSeconds") or DEFAULT_IDLE_SECONDS
        return "idle", float(max(int(seconds), 1))
    return "keep", 0.0


def arm_idle_timer(
    sup: Supervisor, record: ServiceRecord, *, idle_from: datetime | None = None
) -> bool:
    """Arm (or re-arm) the idle stop of a live ``idle_timeout`` instance no run holds.

    Args:
        sup: The supervisor.
        record: The instance as recorded now.
        idle_from: When it became idle (an adoption arms the timer for what is left of it);
            default now.

    Returns:
        Whether a timer is armed (False: leased, ended, or another stop policy).
    """
    if not record.live or record.lease_run_ids:
        return False
    action, seconds = unleased_policy(record)
    if action != "idle":
        return False
    if idle_from is not None:
        seconds = max(seconds - (sup.app.now() - idle_from).total_seconds(), 0.0)
    sup.cancel_idle_timer(record.id)
    sup.idle_timers[record.id] = sup.spawn(
        _idle_stop(sup, record, seconds), name=f"idle-{record.id}"
    )
    return True


async def _idle_stop(sup: Supervisor, record: ServiceRecord, delay: float) -> None:
    await asyncio.sleep(delay)
    async with sup.locks.hold(instance_lock_key(record)):
        if sup.idle_timers.get(record.id) is not asyncio.current_task():
            return  # disarmed or re-armed while this one waited for the lock
        del sup.idle_timers[record.id]
        with as_system("idle timeout"):
            await stop_locked(sup, record, reason="idle timeout", only_if_unleased=True)
