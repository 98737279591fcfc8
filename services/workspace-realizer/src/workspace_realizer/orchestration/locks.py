"""Per-key asyncio locks: one realization per issue, one lifecycle change per workspace, one clone
per project workspace at a time (within this process; the store's optimistic concurrency and the
lifecycle generation guard the rest). The class lives in :mod:`servicekit.locks`, shared with the
runtime supervisor; it is re-exported here for the realizer's imports."""

from __future__ import annotations

from servicekit.locks import KeyedLocks

__all__ = ["KeyedLocks"]
