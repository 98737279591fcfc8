"""The work a service runs while it holds its lease (:mod:`servicekit.leadership`): anything
with ``start()`` and ``stop(timeout)`` (the outbox relay, an inbox), or a coroutine run as a task."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["LeaderWork", "NamedWork", "TaskWork"]

log = logging.getLogger(__name__)


class LeaderWork(Protocol):
    """Work that runs only while this instance holds the lease."""

    async def start(self) -> None:
        """Start (inside the grant's fence)."""
        ...

    async def stop(self, timeout: float) -> None:
        """Stop within ``timeout`` seconds."""
        ...


class TaskWork:
    """A coroutine run as a task while the lease is held; cancelled when it is lost."""

    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.name = name
        self._run = run
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the task (it inherits the fence of the caller's context)."""
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self, timeout: float) -> None:
        """Cancel the task and wait ``timeout`` seconds at most for it to end."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        await asyncio.wait({task}, timeout=max(timeout, 0.01))
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.error("leader work %s had failed", self.name, exc_info=task.exception())


@dataclass(frozen=True)
class NamedWork:
    """A work with the name its logs use."""

    name: str
    work: LeaderWork
