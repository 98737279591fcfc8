"""Leases in the store: who does a service's singleton work, granted with a fencing token.

A lease is a row of the store's ``clipyard_leases`` table (next to the events, in the service's
PostgreSQL schema or SQLite file; a dictionary for the in-memory store): its name, its holder (an
instance id), its token and when it expires. Every store's recorder (:mod:`eventstore.recorders`)
answers the four calls of :class:`LeaseTable`, each one short transaction:

- :meth:`~LeaseTable.acquire_lease` takes a lease nobody holds or whose time ran out, raising
  its token by one (the first grant is token 1);
- :meth:`~LeaseTable.renew_lease` moves the expiry of a lease still held with the same token;
  one that expired is not renewed (it must be acquired again, with a new token);
- :meth:`~LeaseTable.take_over_lease` takes it from a holder known to be gone (the caller
  checked), whether or not its time ran out, if no one took it meanwhile;
- :meth:`~LeaseTable.release_lease` lets it go at once (a clean stop hands over without waiting);
- :meth:`~LeaseTable.leases` lists them, for ``clipyard status``.

Time is the database's own clock on PostgreSQL (``clock_timestamp()``), so replicas on hosts
whose clocks differ agree on expiry; SQLite and the in-memory store are one host's, and use its
clock. The fence (:mod:`eventstore.fence`) is checked by the same table inside each write.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Protocol

from eventstore.fence import Fence, refuse

__all__ = ["LEASE_TABLE", "LeaseRecord", "LeaseTable", "MemoryLeases", "check_row"]

LEASE_TABLE = "clipyard_leases"
"""The leases' table, in the store's own schema or file."""


@dataclass(frozen=True)
class LeaseRecord:
    """One lease as the store holds it."""

    name: str
    holder: str
    token: int
    expires_in_ms: int
    """Milliseconds left (0 or less: it ran out or was released; anyone may take it)."""
    held_for_ms: int
    """Milliseconds since this holder was granted it."""

    @property
    def live(self) -> bool:
        """Whether someone holds it now."""
        return self.expires_in_ms > 0


class LeaseTable(Protocol):
    """The lease calls every Clipyard recorder answers."""

    def acquire_lease(self, name: str, holder: str, ttl_ms: int) -> int | None:
        """Take ``name`` for ``ttl_ms`` if nobody holds it; its new token, else None."""
        ...

    def renew_lease(self, name: str, holder: str, token: int, ttl_ms: int) -> bool:
        """Hold ``name`` ``ttl_ms`` longer if still held by ``holder`` with ``token``."""
        ...

    def take_over_lease(self, name: str, holder: str, ttl_ms: int, from_token: int) -> int | None:
        """Take ``name`` whoever holds it, if still granted with ``from_token``; the new token."""
        ...

    def release_lease(self, name: str, holder: str, token: int) -> bool:
        """Let ``name`` go now if still held by ``holder`` with ``token``."""
        ...

    def leases(self) -> list[LeaseRecord]:
        """Every lease the store knows, by name."""
        ...


def check_row(fence: Fence, row: tuple[str, int, int] | None) -> None:
    """Raise (and log) unless ``row`` (holder, token, ms left) still grants ``fence``."""
    if row is None:
        raise refuse(fence, "the lease was never granted in this store")
    holder, token, left_ms = row
    if holder != fence.holder or token != fence.token:
        raise refuse(fence, f"now held by {holder} with token {token}")
    if left_ms <= 0:
        raise refuse(fence, f"it ran out {-left_ms} ms ago")


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class _Row:
    holder: str
    token: int
    expires_ms: int
    acquired_ms: int


class MemoryLeases:
    """The leases of the in-memory store (one process): a dictionary under a lock."""

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}
        self._lock = threading.RLock()

    def acquire_lease(self, name: str, holder: str, ttl_ms: int) -> int | None:
        """See :meth:`LeaseTable.acquire_lease`."""
        with self._lock:
            now = _now_ms()
            row = self._rows.get(name)
            if row is not None and row.expires_ms > now:
                return None
            token = 1 if row is None else row.token + 1
            self._rows[name] = _Row(holder, token, now + ttl_ms, now)
            return token

    def renew_lease(self, name: str, holder: str, token: int, ttl_ms: int) -> bool:
        """See :meth:`LeaseTable.renew_lease`."""
        with self._lock:
            now = _now_ms()
            row = self._rows.get(name)
            if row is None or (row.holder, row.token) != (holder, token) or row.expires_ms <= now:
                return False
            row.expires_ms = now + ttl_ms
            return True

    def take_over_lease(self, name: str, holder: str, ttl_ms: int, from_token: int) -> int | None:
        """See :meth:`LeaseTable.take_over_lease`."""
        with self._lock:
            row = self._rows.get(name)
            if row is None or row.token != from_token:
                return None
            now = _now_ms()
            self._rows[name] = _Row(holder, from_token + 1, now + ttl_ms, now)
            return from_token + 1

    def release_lease(self, name: str, holder: str, token: int) -> bool:
        """See :meth:`LeaseTable.release_lease`."""
        with self._lock:
            row = self._rows.get(name)
            if row is None or (row.holder, row.token) != (holder, token):
                return False
            row.expires_ms = 0
            return True

    def leases(self) -> list[LeaseRecord]:
        """See :meth:`LeaseTable.leases`."""
        with self._lock:
            now = _now_ms()
            return [
                LeaseRecord(name, r.holder, r.token, r.expires_ms - now, now - r.acquired_ms)
                for name, r in sorted(self._rows.items())
            ]

    def check(self, fence: Fence) -> None:
        """Raise unless ``fence`` still holds (called under the store's own lock)."""
        with self._lock:
            row = self._rows.get(fence.lease)
            found = None if row is None else (row.holder, row.token, row.expires_ms - _now_ms())
            check_row(fence, found)
