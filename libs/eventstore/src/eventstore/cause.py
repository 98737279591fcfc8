"""Who is acting, for which run, and why: the cause stamped on every stored event.

A use case runs inside ``with acting(cause): ...``; every event an aggregate triggers inside that
block carries the cause's actor, run and reason (see :class:`eventstore.ClipyardAggregate`). The
cause lives in a context variable, so it follows ``await`` and is copied into the store's thread
by :class:`eventstore.StoreExecutor`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from contracts.base import Actor

__all__ = ["Cause", "acting", "current_cause", "system_cause"]


@dataclass(frozen=True)
class Cause:
    """The acting principal and the reason for a change."""

    actor: Actor
    """Who acted (admin, board, agent, or Clipyard itself)."""
    run_id: str | None = None
    """The heartbeat run acted for, if any."""
    reason: str | None = None
    """Why, in a few words (shown in audit trails)."""
    company_id: str | None = None
    """The company acted in, if any."""

    def because(self, reason: str) -> Cause:
        """The same cause with another reason.

        Args:
            reason: The new reason.

        Returns:
            A new cause.
        """
        return replace(self, reason=reason)


_CURRENT: ContextVar[Cause | None] = ContextVar("clipyard_cause", default=None)


def current_cause() -> Cause | None:
    """The cause of the current context, or None outside any :func:`acting` block."""
    return _CURRENT.get()


@contextmanager
def acting(cause: Cause) -> Iterator[Cause]:
    """Make ``cause`` current for the block (nested blocks override, then restore).

    Args:
        cause: The cause to stamp on the events triggered in the block.

    Yields:
        The cause.
    """
    token = _CURRENT.set(cause)
    try:
        yield cause
    finally:
        _CURRENT.reset(token)


def system_cause(service: str, reason: str | None = None, *, run_id: str | None = None) -> Cause:
    """A cause for work Clipyard does by itself (timers, reactions to other services' events).

    Args:
        service: The acting service's name; it becomes the system actor's id.
        reason: Why.
        run_id: The run concerned, if any.

    Returns:
        The cause.
    """
    return Cause(actor=Actor(type="system", id=service), run_id=run_id, reason=reason)
