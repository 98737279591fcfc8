"""Fenced writes: work that must happen once writes only while its lease is still its own.

Singleton work (the outbox relay, the inboxes, a controller's dispatcher, a sweep) runs on the
instance that holds a lease (:mod:`eventstore.leases`). The lease can be lost without the holder
knowing at once: paused past the lease's time to live (a stopped process, a long GC, a suspended
VM) or cut off from the database, another instance takes it over. The holder's next write must then
fail. So the work runs inside :func:`fenced`, which puts a :class:`Fence` (the lease's name, holder
and the token it was granted with) in a context variable; the store's recorders
(:mod:`eventstore.recorders`) check it **in the transaction of every write** (events, tracking):
the lease row must still name this holder and token and must not have expired, else the write is
refused with :class:`StaleFenceError` and nothing is recorded. On PostgreSQL the check locks the
lease row (``FOR SHARE``), so a takeover waits for a write that passed its check to commit: a
write is either checked before the takeover or refused after it, never both.

The context variable travels with the work: tasks created inside it inherit it, and
:class:`eventstore.executor.StoreExecutor` runs each call on the store's thread in a copy of the
caller's context. Writes outside any fence (request handlers, which any replica may serve under the
store's optimistic concurrency) are not checked.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Fence", "StaleFenceError", "active_fence", "fenced", "on_refusal", "refuse"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fence:
    """What a write made under a lease must still find in the lease's row."""

    lease: str
    """The lease's name (``singleton``, ``instance/<id>``)."""
    holder: str
    """The instance that was granted it."""
    token: int
    """The fencing token: the lease's grant number, raised by one on every takeover."""


class StaleFenceError(RuntimeError):
    """A fenced write found that its lease is no longer held with its token: nothing was written."""

    def __init__(self, fence: Fence, found: str) -> None:
        super().__init__(
            f"write refused: lease {fence.lease!r} is no longer held by {fence.holder} with "
            f"token {fence.token} ({found}); this instance stops its singleton work and the "
            "lease's new holder carries on"
        )
        self.fence = fence
        self.found = found


_ACTIVE: contextvars.ContextVar[Fence | None] = contextvars.ContextVar(
    "clipyard_fence", default=None
)


def active_fence() -> Fence | None:
    """The fence the current context's writes are checked against (None: unfenced)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def fenced(fence: Fence) -> Iterator[Fence]:
    """Check every write made in this context (and the tasks it creates) against ``fence``."""
    token = _ACTIVE.set(fence)
    try:
        yield fence
    finally:
        _ACTIVE.reset(token)


_LISTENERS: list[Callable[[Fence], None]] = []


def on_refusal(listener: Callable[[Fence], None]) -> Callable[[], None]:
    """Call ``listener(fence)`` (from the writing thread) whenever a fenced write is refused, so
    the lease's side learns at once that it lost the lease; returns the call that removes it."""
    _LISTENERS.append(listener)

    def remove() -> None:
        with contextlib.suppress(ValueError):
            _LISTENERS.remove(listener)

    return remove


def refuse(fence: Fence, found: str) -> StaleFenceError:
    """Log the refused write (a warning an operator can find), tell the listeners, and return
    the error to raise."""
    error = StaleFenceError(fence, found)
    logger.warning(
        "fenced write refused",
        extra={
            "lease": fence.lease,
            "holder": fence.holder,
            "fence_token": fence.token,
            "found": found,
        },
    )
    for listener in list(_LISTENERS):
        try:
            listener(fence)
        except Exception:
            logger.exception("fence refusal listener failed")
    return error
