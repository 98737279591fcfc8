"""One deadline for a service's whole stop, shared out among its stages.

A service has ``settings.shutdown_timeout`` (5 s) from SIGTERM to exit. Its stages (endpoints,
long operations, the service's own hooks, inboxes, relay flush, NATS drain, store close) stop in
turn; each gets its share of the time that remains, by weight, so a stage with nothing to do leaves
its time to the next ones, and each is cut off once its share is spent: no stage can take the time
of those after it. A reserve stays for what runs after the stages (the telemetry flush) and for the
interpreter's exit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, Final

__all__ = ["EXIT_RESERVE", "TELEMETRY_SHARE", "ShutdownBudget", "Stage"]

log = logging.getLogger(__name__)

EXIT_RESERVE: Final = 0.8
"""Seconds kept for the interpreter's exit after everything else."""

TELEMETRY_SHARE: Final = 1.0
"""Seconds kept for the final telemetry flush (after the stages)."""

_CUT_GRACE: Final = 0.2
"""How long past its share a stage may run before it is cut off (it got its timeout already)."""

Stage = Callable[[float], Awaitable[Any]]
"""``await stage(timeout)``: stop something within ``timeout`` seconds."""


class ShutdownBudget:
    """The stop deadline of one service and the stages that share it."""

    def __init__(self, total: float, *, reserve: float = TELEMETRY_SHARE) -> None:
        """Plan a stop of at most ``total`` seconds, ``reserve`` of them kept for after the stages.

        Args:
            total: Seconds from the start of the stop to the end of the last stage and the reserve.
            reserve: Seconds the stages leave for whatever runs after them.
        """
        self.total = max(total, 0.0)
        self.reserve = min(max(reserve, 0.0), self.total / 2)
        self._deadline: float | None = None
        self._pending_weight = 0.0

    def start(self) -> None:
        """Start the clock (idempotent: the first call counts)."""
        if self._deadline is None:
            self._deadline = time.monotonic() + self.total

    def remaining(self) -> float:
        """Seconds left before the deadline (the whole budget before :meth:`start`)."""
        if self._deadline is None:
            return self.total
        return max(0.0, self._deadline - time.monotonic())

    def for_stages(self) -> float:
        """Seconds left for the stages (the reserve excluded)."""
        return max(0.0, self.remaining() - self.reserve)

    def push(self, stack: AsyncExitStack, name: str, stage: Stage, *, weight: float = 1.0) -> None:
        """Register ``stage`` on ``stack``: on unwinding it runs with its share of what remains.

        Its share is ``weight / (weight of the stages not yet run)`` of the stages' time left. A
        stage that fails is logged; one that outlives its share is cancelled and left behind, and
        the stop goes on.

        Args:
            stack: The exit stack (stages run in reverse order of registration).
            name: For logs (``"endpoints"``, ``"relay"``).
            stage: ``await stage(timeout)``.
            weight: Its relative claim on the time left.
        """
        self._pending_weight += weight

        async def run() -> None:
            self.start()
            share = self.for_stages() * weight / max(self._pending_weight, weight)
            self._pending_weight -= weight
            await self._bounded(name, stage, share)

        stack.push_async_callback(run)

    async def _bounded(self, name: str, stage: Stage, share: float) -> None:
        started = time.monotonic()
        task = asyncio.ensure_future(stage(share))
        task.add_done_callback(_retrieve)
        cut_off = min(share + _CUT_GRACE, max(self.remaining(), 0.01))
        done, _ = await asyncio.wait({task}, timeout=cut_off)
        spent_ms = round((time.monotonic() - started) * 1000)
        if not done:
            log.warning(
                "shutdown stage %s cut off after %d ms (its share was %.2f s)",
                name,
                spent_ms,
                share,
                extra={"stage": name},
            )
            task.cancel()
            await asyncio.wait({task}, timeout=0.05)
            return
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("shutdown stage %s failed", name, exc_info=error, extra={"stage": name})
            return
        log.debug("shutdown stage %s done in %d ms", name, spent_ms, extra={"stage": name})


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a stage's outcome as seen (a stage left behind must not warn when it ends)."""
    if not task.cancelled():
        task.exception()
