"""Work a service runs in the background (watchers, timers, runs, stops in flight): each task is
kept until it ends, so that none is garbage-collected mid-way, its failure is logged rather than
lost, and a stop can cancel what still runs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["BackgroundTasks"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class BackgroundTasks:
    """The background tasks of one service."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        """Run ``work`` in the background; its failure is logged, never lost."""
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("background task %s failed", task.get_name(), exc_info=error)

    def running(self) -> list[asyncio.Task[Any]]:
        """The ones that run now."""
        return [task for task in self._tasks if not task.done()]

    @property
    def busy(self) -> int:
        """How many of them run."""
        return len(self.running())

    async def idle(self, timeout: float = 10.0) -> None:
        """Wait until none runs, ``timeout`` seconds at most."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while self.busy and loop.time() < end:
            await asyncio.wait(self.running(), timeout=end - loop.time())

    async def cancel_all(self, timeout: float = 1.0) -> None:
        """Cancel every one that runs and wait ``timeout`` seconds at most for them to end."""
        tasks = self.running()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
