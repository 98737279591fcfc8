"""Saving again when another process saved the same aggregate first.

The realizer's replicas share one store: a run's lease (the controller's events, applied by
whichever replica's inbox takes them) or a board's change of the issue can save the workspace
or the issue between a use case's load and its save. The save then fails on the aggregate's
version (``IntegrityError``) and nothing was written. A use case that loads what it changes
from the store and records a fact that still holds (a realization's reuse) is simply run
again: the second load sees the other save.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import IntegrityError

if TYPE_CHECKING:
    from collections.abc import Callable

    from workspace_realizer.orchestration.context import Store

__all__ = ["CONFLICT_ATTEMPTS", "saved_despite_conflicts"]

CONFLICT_ATTEMPTS = 5


async def saved_despite_conflicts(
    store: Store, fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> Any:
    """``await store(fn, *args, **kwargs)``, run again (up to :data:`CONFLICT_ATTEMPTS` times,
    a few ms apart) while another save of the same aggregate came first.

    Raises:
        IntegrityError: Still conflicting after the last attempt.
    """
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            return await store(fn, *args, **kwargs)
        except IntegrityError:
            if attempt == CONFLICT_ATTEMPTS:
                raise
            await asyncio.sleep(0.01 * attempt)
    raise AssertionError("unreachable")  # pragma: no cover
