"""Per-key asyncio locks within one service process: one realization per issue, one lifecycle
change per workspace, one start per runtime service identity at a time. (Across processes, the
event store's optimistic concurrency and the services' own guards do the rest.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["KeyedLocks"]


class KeyedLocks:
    """A lock per key, dropped when no one holds or waits for it (so keys cost nothing once
    idle). Use it from one event loop."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold the lock of ``key`` for the block (waiting while another task holds it)."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if not self._users[key]:
                del self._users[key]
                del self._locks[key]

    def users(self, key: str) -> int:
        """How many tasks hold or wait for the lock of ``key`` now (0 when none)."""
        return self._users.get(key, 0)

    def __len__(self) -> int:
        """How many keys have a lock now (held or waited for)."""
        return len(self._locks)
