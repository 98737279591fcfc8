"""Time in the orchestration: the run's backstop (the controller's own timer at the adapter's
deadline plus a grace), the slot retry backoff, and waiting for an event or a time.

The supervisor enforces an adapter's wall-clock timeout itself; the backstop is for a supervisor
that does not: at ``deadline + grace`` the controller sends ``KillAdapter{timedOut}``, and ends the
run ``timed_out`` even when no answer comes. Heartbeat intervals are the application's
(``due_timer_wakes``); the dispatcher's tick asks for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

__all__ = ["Clock", "backstop_at", "seconds_until", "slot_backoff", "utc_now", "wait_event"]

Clock = Callable[[], datetime]
"""Now, timezone-aware (tests pass their own)."""


def utc_now() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


def backstop_at(deadline: datetime, grace: float) -> datetime:
    """When the controller kills an adapter the supervisor has not stopped by ``deadline``."""
    return deadline + timedelta(seconds=grace)


def seconds_until(when: datetime, now: datetime) -> float:
    """Seconds from ``now`` to ``when`` (0 when past)."""
    return max((when - now).total_seconds(), 0.0)


def slot_backoff(attempt: int, initial: float, maximum: float) -> float:
    """The wait before retry ``attempt`` (0-based) of a slot request the pool refused."""
    return float(min(initial * (2**attempt), maximum))


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait for ``event`` at most ``timeout`` seconds; return whether it is set."""
    if event.is_set():
        return True
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return event.is_set()
    return True
