"""What ``clipyard up`` and ``clipyard cluster up`` share while they run in the foreground."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

__all__ = ["until_stopped"]


async def until_stopped(work: Coroutine[Any, Any, None], stopping: asyncio.Event) -> bool:
    """Run ``work`` unless a stop is requested first; True when it finished (a failure of
    ``work`` is raised)."""
    task = asyncio.create_task(work)
    waiter = asyncio.create_task(stopping.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task.done():
        task.result()  # re-raise a start failure
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False
