"""Memoized resolution per ``(company, run or operation, provider)`` (DECISIONS 9, reference §8.3).

Concurrent callers of one key share one in-flight resolution (single flight), so any number of
remotes of one provider in one run cause one resolution and one audit event. The resolution runs
as its own task: a caller that is cancelled does not cancel it for the others. Results (None
included) are kept for a TTL (default 6 h) in a bounded memo (oldest evicted); a failed
resolution is forgotten, so the next caller tries again. A rotation takes effect at the next run.

Lookups with neither a run nor an operation (pull-request facts on a detail read, a reaper pass)
share one entry per company and provider for a short TTL (default 5 minutes, the pull-request
cache's), so repeated reads cause one resolution and one audit event per window, not one each.
Deleting a secret forgets the company's entries (:meth:`ResolutionMemo.forget`): a deleted token
is never handed out again, not even to a run that already resolved it.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from contracts.credentials import GitProvider
from git_credentials.domain.chain import ResolvedToken

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_READ_TTL_SECONDS",
    "DEFAULT_TTL_SECONDS",
    "MemoKey",
    "ResolutionMemo",
    "memo_key",
]

DEFAULT_TTL_SECONDS = 6 * 3600.0
DEFAULT_READ_TTL_SECONDS = 300.0
DEFAULT_MAX_ENTRIES = 10_000

MemoKey = tuple[str, str, str, GitProvider]
"""``(company_id, "run" | "operation" | "read", id, provider)``."""
Resolve = Callable[[], Awaitable[ResolvedToken | None]]


def memo_key(
    company_id: str, run_id: str | None, operation_id: str | None, provider: GitProvider
) -> MemoKey:
    """The memo key: per run, else per operation, else the company's reads."""
    if run_id:
        return (company_id, "run", run_id, provider)
    if operation_id:
        return (company_id, "operation", operation_id, provider)
    return (company_id, "read", "", provider)


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
        read_ttl_seconds: float = DEFAULT_READ_TTL_SECONDS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Create an empty memo.

        Args:
            ttl_seconds: How long a resolution is reused.
            read_ttl_seconds: How long a resolution of reads (no run, no operation) is reused.
            max_entries: The most keys kept; the oldest is evicted beyond it.
            clock: Monotonic seconds (tests pass their own).
        """
        if ttl_seconds <= 0 or read_ttl_seconds <= 0 or max_entries <= 0:
            raise ValueError("ttl_seconds, read_ttl_seconds and max_entries must be positive")
        self._ttl = ttl_seconds
        self._read_ttl = read_ttl_seconds
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
        now = self._clock()
        self._expire(now)
        entry = self._entries.get(key)
        if entry is not None and key[1] == "read" and now - entry.created_at >= self._read_ttl:
            del self._entries[key]
            entry = None
        performed = entry is None
        if entry is None:
            entry = _Entry(asyncio.ensure_future(resolve()), now)
            self._entries[key] = entry
            entry.task.add_done_callback(lambda task: self._settled(key, task))
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return await asyncio.shield(entry.task), performed

    def forget(self, company_id: str) -> int:
        """Drop every entry of ``company_id`` (a secret was deleted); returns how many."""
        keys = [key for key in self._entries if key[0] == company_id]
        for key in keys:
            del self._entries[key]
        return len(keys)

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
