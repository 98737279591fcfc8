"""What the orchestration of one running supervisor shares: the application and its store
thread, the settings, the port allocator, keyed locks, the background tasks (watchers of
live services, idle timers, stops started by a finished run), the starts in flight, and whether
the node is stopping (a stop-all drains it: nothing starts any more).

The background tasks are the supervisor's own: a stop of the supervisor cancels them and leaves
every service running (DECISIONS 7).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from eventstore import acting, system_cause
from runtime_supervisor.adapters.process import PortAllocator
from runtime_supervisor.domain import StateConflictError
from runtime_supervisor.settings import SERVICE_NAME
from servicekit.background import BackgroundTasks
from servicekit.locks import KeyedLocks

if TYPE_CHECKING:
    from runtime_supervisor.adapters.containment.launcher import Launcher
    from runtime_supervisor.application import RuntimeSupervisorApplication
    from runtime_supervisor.orchestration.slots.runtime import SlotRuntime
    from runtime_supervisor.settings import SupervisorSettings

__all__ = ["KeyedLocks", "Store", "Supervisor", "as_system"]

log = logging.getLogger(__name__)
T = TypeVar("T")

Store = Callable[..., Awaitable[Any]]
"""``await store(fn, *args, **kwargs)``: run a call on the store's thread."""


def as_system(reason: str, run_id: str | None = None) -> contextlib.AbstractContextManager[Any]:
    """Stamp what the supervisor does by itself (a watcher, a timer) with its own cause."""
    return acting(system_cause(SERVICE_NAME, reason, run_id=run_id))


@dataclass(kw_only=True)
class Supervisor:
    """The running supervisor's orchestration state (one per process)."""

    app: RuntimeSupervisorApplication
    store: Store
    settings: SupervisorSettings
    node_id: str = "local"
    base_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    """The environment services and jobs start from (sanitized before use)."""
    locks: KeyedLocks = field(default_factory=KeyedLocks)
    allocator: PortAllocator = field(init=False)
    stopping: set[str] = field(default_factory=set)
    """Instances a stop of ours is ending: their watcher leaves the recording to the stop."""
    watched: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    idle_timers: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    starts: set[asyncio.Task[Any]] = field(default_factory=set)
    """The tasks running a start now (a stop-all cancels them)."""
    draining: bool = False
    """Set by stop-all (``clipyard up`` stopping): from then on nothing starts on this node."""
    slots: SlotRuntime | None = None
    """The adapter slots (set at start, before the endpoints)."""
    launcher: Launcher | None = None
    """The launcher of everything a company runs here (set at start; None: nothing runs)."""
    adopted: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the services a previous supervisor left are adopted (at once when there is no
    adoption): what a finished run releases waits for it."""
    background: BackgroundTasks = field(default_factory=BackgroundTasks)

    def __post_init__(self) -> None:
        self.adopted.set()
        low, high = self.settings.port_range
        # Called on the store's thread only (inside the start's reservation), so the read models
        # it reads are never read while being written.
        self.allocator = PortAllocator(low, high, reserved=self.app.reserved_ports)

    def spawn(self, work: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        """Run ``work`` in the background; its failure is logged, never lost."""
        return self.background.spawn(work, name)

    def check_accepting(self) -> None:
        """Refuse new work while the node is stopping (after a stop-all).

        Raises:
            StateConflictError: The node is stopping (409 ``state_conflict``).
        """
        if self.draining:
            raise StateConflictError(
                "The node is stopping: no runtime service or job starts on it any more.",
                node=self.node_id,
            )

    def cancel_idle_timer(self, service_id: str) -> None:
        """Disarm the idle stop of an instance (a new lease arrived, or it ended)."""
        timer = self.idle_timers.pop(service_id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()

    async def close(self, timeout: float = 1.0) -> None:
        """Cancel every background task (watchers, timers, stops in flight); services keep
        running, to be adopted by the next supervisor (DECISIONS 7)."""
        await self.background.cancel_all(timeout)
        self.watched.clear()
        self.idle_timers.clear()
