"""One check shared by every request that asks while it runs, its answer reused briefly after.

``GET /api/health`` pings five services, NATS and the store. A load balancer, a monitor and an
operator's page all ask, often at once, and a round of pings for each of them costs far more
than a fresh answer is worth. So the gateway runs at most one round at a time: a request
that arrives while one runs waits for that round; one that arrives within ``fresh_for`` seconds
of a round's start gets that round's answer. An answer is never older than ``fresh_for`` plus the
round's own time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["SharedCheck"]

T = TypeVar("T")


class SharedCheck(Generic[T]):
    """The latest answer of a check, and the round that is running, if any."""

    def __init__(self, fresh_for: float, clock: Callable[[], float] = time.monotonic) -> None:
        """Reuse an answer for ``fresh_for`` seconds after its round started."""
        self.fresh_for = fresh_for
        self._clock = clock
        self._answer: tuple[float, T] | None = None
        self._round: asyncio.Future[T] | None = None

    async def get(self, check: Callable[[], Awaitable[T]]) -> T:
        """A fresh enough answer, the running round's, or a new round of ``check``.

        A caller that gives up (its request is cancelled) does not cancel the round the others
        wait for. A round that fails fails its waiters, and the next caller starts a new one.
        """
        if self._answer is not None and self._clock() - self._answer[0] < self.fresh_for:
            return self._answer[1]
        if self._round is None:
            self._round = asyncio.ensure_future(self._run(check))
        return await asyncio.shield(self._round)

    async def _run(self, check: Callable[[], Awaitable[T]]) -> T:
        started = self._clock()
        try:
            answer = await check()
        finally:
            self._round = None
        self._answer = (started, answer)
        return answer
