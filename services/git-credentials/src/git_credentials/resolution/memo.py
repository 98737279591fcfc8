"""Memoized resolution per ``(company, run or operation, provider)`` (DECISIONS 9, reference §8.3).

Concurrent callers of one key share one in-flight resolution (single flight), so any number of
remotes of one provider in one run cause one resolution and one audit event. The resolution runs
as its own task: a caller that is cancelled does not cancel it for the others. Results (None
included) are kept for a TTL (default 6 h) in a bounded memo (oldest evicted); a failed
resolution is forgotten, so the next caller tries again. A rotation takes effect at the next run.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from contracts.credentials import GitProvider
from git_credentials.resolution.chain import ResolvedToken

__all__ = ["DEFAULT_MAX_ENTRIES", "DEFAULT_TTL_SECONDS", "MemoKey", "ResolutionMemo", "memo_key"]

DEFAULT_TTL_SECONDS = 6 * 3600.0
DEFAULT_MAX_ENTRIES = 10_000

MemoKey = tuple[str, str, str, GitProvider]
"""``(company_id, "run" | "operation", id, provider)``."""
Resolve = Callable[[], Awaitable[ResolvedToken | None]]


def memo_key(
    company_id: str, run_id: str | None, operation_id: str | None, provider: GitProvider
) -> MemoKey | None:
    """The memo key: per run, else per operation; None (never memoized) without either."""
    if run_id:
        return (company_id, "run", run_id, provider)
    if operation_id:
        return (company_id, "operation", operation_id, provider)
    return None


@dataclass
class _Entry:
    task: asyncio.Future[ResolvedToken | None]
    created_at: float


class ResolutionMemo:
    """Single-flight, TTL-bounded, size-bounded memo of resolutions."""

    def __init__(
        self,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Create an empty memo.

        Args:
            ttl_seconds: How long a resolution is reused.
            max_entries: The most keys kept; the oldest is evicted beyond it.
            clock: Monotonic seconds (tests pass their own).
        """
        if ttl_seconds <= 0 or max_entries <= 0:
            raise ValueError("ttl_seconds and max_entries must be positive")
        self._ttl = ttl_seconds
        self._max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[MemoKey, _Entry] = OrderedDict()

    def __len__(self) -> int:
        """The number of keys held (in flight or resolved)."""
        return len(self._entries)

    async def get(
        self,
        *,
        company_id: str,
        run_id: str | None,
        operation_id: str | None,
        provider: GitProvider,
        resolve: Resolve,
    ) -> tuple[ResolvedToken | None, bool]:
        """The memoized resolution of a key, resolving it when needed.

        Args:
            company_id: The company.
            run_id: The run (takes precedence over ``operation_id``).
            operation_id: The operation, when no run is involved.
            provider: ``github`` or ``gitlab``.
            resolve: Performs the resolution (called at most once per live key).

        Returns:
            The token (or None) and True when this call performed the resolution.

        Raises:
            Exception: Whatever ``resolve`` raised (not cached).
        """
        key = memo_key(company_id, run_id, operation_id, provider)
        if key is None:
            return await resolve(), True
        now = self._clock()
        self._expire(now)
        entry = self._entries.get(key)
        performed = entry is None
        if entry is None:
            entry = _Entry(asyncio.ensure_future(resolve()), now)
            self._entries[key] = entry
            entry.task.add_done_callback(lambda task: self._settled(key, task))
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return await asyncio.shield(entry.task), performed

    def _expire(self, now: float) -> None:
        while self._entries:
            oldest = next(iter(self._entries.values()))
            if now - oldest.created_at < self._ttl:
                return
            self._entries.popitem(last=False)

    def _settled(self, key: MemoKey, task: asyncio.Future[ResolvedToken | None]) -> None:
        failed = task.cancelled() or task.exception() is not None
        entry = self._entries.get(key)
        if failed and entry is not None and entry.task is task:
            del self._entries[key]
