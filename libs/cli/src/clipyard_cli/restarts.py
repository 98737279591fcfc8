"""When ``clipyard up`` restarts a process that exited: backoff, its reset, and the crash loop.

The first exit of a streak waits ``first_delay`` (0.5 s) before the restart; each exit after a
short run doubles it, up to ``max_delay`` (10 s). A process that stayed up ``stable_after`` (30 s)
starts a new streak. ``loop_exits`` (5) exits in a row within ``loop_window`` (60 s) is a crash
loop: ``clipyard up`` says so and keeps retrying at ``max_delay``; it never gives up by itself.
Pure bookkeeping, no processes: times are ``time.monotonic()`` seconds handed in by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ExitStreak", "RestartPolicy"]


@dataclass(frozen=True, kw_only=True)
class RestartPolicy:
    """How long to wait before restarting a process, and what counts as a crash loop."""

    first_delay: float = 0.5
    max_delay: float = 10.0
    stable_after: float = 30.0
    """Seconds up after which a process's earlier exits no longer count."""
    loop_exits: int = 5
    loop_window: float = 60.0

    def delay(self, exits: int) -> float:
        """The wait before the restart that follows the ``exits``-th exit of a streak (1-based)."""
        return min(self.first_delay * 2.0 ** max(exits - 1, 0), self.max_delay)


@dataclass
class ExitStreak:
    """One process's exits in a row (each after a run shorter than ``stable_after``)."""

    policy: RestartPolicy = field(default_factory=RestartPolicy)
    times: list[float] = field(default_factory=list)
    """When each exit of the streak happened (``time.monotonic()``), oldest first."""

    def exited(self, at: float, uptime: float) -> float:
        """Count an exit at ``at`` after ``uptime`` seconds up; returns the wait before restarting.

        A run of at least ``stable_after`` seconds ends the previous streak first.
        """
        if uptime >= self.policy.stable_after:
            self.times.clear()
        self.times.append(at)
        if self.crash_loop:
            return self.policy.max_delay
        return self.policy.delay(len(self.times))

    def stayed_up(self, uptime: float) -> bool:
        """Forget the streak once the current run has lasted ``stable_after``; True if it did."""
        if self.times and uptime >= self.policy.stable_after:
            self.times.clear()
            return True
        return False

    @property
    def count(self) -> int:
        """Exits in the current streak."""
        return len(self.times)

    @property
    def crash_loop(self) -> bool:
        """Whether the last ``loop_exits`` exits in a row all fell within ``loop_window``."""
        n = self.policy.loop_exits
        return len(self.times) >= n and self.times[-1] - self.times[-n] <= self.policy.loop_window
