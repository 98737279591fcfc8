"""A time-limited cache whose concurrent misses of one key share a single load.

Used for the pull-request facts (reference §3.4: 5 minutes per ``company:owner/repo#number``):
only the answers the caller chooses to keep are stored, so failed lookups are retried on the
next read, and every caller that misses while a load of the same key is running awaits that load
instead of starting another.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["SingleFlightCache"]

T = TypeVar("T")

DEFAULT_MAX_ENTRIES = 10_000


class SingleFlightCache(Generic[T]):
    """Values by key for ``ttl`` seconds, loaded at most once at a time per key.

    Args:
        ttl: How long a kept value is served, in seconds of ``clock``.
        clock: A monotonic clock (injectable for tests).
        max_entries: Past this size, expired entries are dropped, then the oldest ones.
    """

    def __init__(
        self,
        *,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = DEFAULT_MAX_ENTRIES,
    ) -> None:
        self._ttl = ttl
        self._clock = clock
        self._max_entries = max_entries
        self._values: dict[str, tuple[float, T]] = {}
        self._inflight: dict[str, asyncio.Task[T]] = {}

    def cached(self, key: str) -> T | None:
        """The value kept for ``key`` if it has not expired, else None."""
        entry = self._values.get(key)
        if entry is None:
            return None
        expires_at, value = entry
        if self._clock() >= expires_at:
            del self._values[key]
            return None
        return value

    async def get(
        self, key: str, load: Callable[[], Awaitable[T]], *, keep: Callable[[T], bool]
    ) -> T:
        """The value of ``key``: cached, or the result of the running load, or a new load.

        Args:
            key: The cache key.
            load: Produces the value when it is neither cached nor being loaded.
            keep: Whether a loaded value may be cached (False: the next read loads again).

        Returns:
            The value. A caller that is cancelled does not cancel a load others await.
        """
        value = self.cached(key)
        if value is not None:
            return value
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._load(key, load, keep))
            self._inflight[key] = task
            task.add_done_callback(lambda done: self._forget(key, done))
        return await asyncio.shield(task)

    async def aclose(self) -> None:
        """Cancel the loads still running and wait for them to end."""
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._inflight.clear()

    async def _load(
        self, key: str, load: Callable[[], Awaitable[T]], keep: Callable[[T], bool]
    ) -> T:
        value = await load()
        if keep(value):
            self._store(key, value)
        return value

    def _store(self, key: str, value: T) -> None:
        now = self._clock()
        self._values.pop(key, None)
        self._values[key] = (now + self._ttl, value)
        if len(self._values) <= self._max_entries:
            return
        for stale in [k for k, (expires_at, _) in self._values.items() if now >= expires_at]:
            del self._values[stale]
        while len(self._values) > self._max_entries:
            del self._values[next(iter(self._values))]

    def _forget(self, key: str, task: asyncio.Task[T]) -> None:
        if self._inflight.get(key) is task:
            del self._inflight[key]
        if not task.cancelled():
            task.exception()  # retrieved, so an error nobody awaited is not reported as lost
