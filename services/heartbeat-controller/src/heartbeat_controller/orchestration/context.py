"""What the orchestration of one running controller shares: the application and its store
thread, the ports, the run settings, and one channel per active run (its cancel signal, the
workspace lease hand-over, the adapter's end delivered by the inbox).

The inbox runs on the store's thread: it hands an adapter's end over with
``loop.call_soon_threadsafe(orch.deliver_end, ...)``. An end for a run without a channel yet
(a restart: the inbox may deliver before recovery re-attaches the run) waits in a small bounded
mailbox until the channel is opened; so does a cancel (the run endpoints answer during recovery).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from heartbeat_controller.orchestration.timers import Clock, utc_now
from servicekit.background import BackgroundTasks

if TYPE_CHECKING:
    from contracts.slot_events import SlotAdapterFinished
    from heartbeat_controller.orchestration.ports import RunPorts

__all__ = ["Orchestration", "RunChannel", "RunSettings", "Store"]

log = logging.getLogger(__name__)
T = TypeVar("T")

Store = Callable[..., Awaitable[Any]]
"""``await store(fn, *args, **kwargs)``: run a call on the store's thread."""

_MAILBOX = 1024
"""Ends kept for runs without a channel (oldest dropped first)."""


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """How runs are driven (from the controller's settings)."""

    api_url: str = "http://127.0.0.1:8080"
    """``CLIPYARD_API_URL`` as the adapters see it."""
    kill_grace: float = 15.0
    """Seconds after an adapter's deadline before the controller's own backstop kills it."""
    end_wait: float = 10.0
    """Seconds to wait for the adapter's end event after a kill was answered (or not)."""
    slot_retry_initial: float = 0.5
    slot_retry_max: float = 5.0
    tick: float = 1.0
    """Seconds between the dispatcher's periodic passes (timer wakes, missed nudges)."""
    default_timeout_sec: int = 3600
    prepare_timeout: float = 1800.0
    """Seconds a run may spend in its stages before the launch (``CLIPYARD_RUN_PREPARE_TIMEOUT``);
    past it the run ends ``failed``, with the error code of the stage it was stuck in."""
    finish_retry_initial: float = 0.2
    finish_retry_max: float = 30.0
    """The backoff between attempts to record a run's finish (retried until it is recorded or
    the controller stops)."""
    clock: Clock = utc_now


@dataclass(eq=False)
class RunChannel:
    """The signals of one active run."""

    run_id: str
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    lease: asyncio.Event = field(default_factory=asyncio.Event)
    end: asyncio.Future[SlotAdapterFinished] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass(kw_only=True)
class Orchestration:
    """The running controller's orchestration state (one per process)."""

    app: Any
    """The ``HeartbeatControllerApplication`` (its API: docs/design/heartbeat-runs.md)."""
    store: Store
    ports: RunPorts
    settings: RunSettings = field(default_factory=RunSettings)
    channels: dict[str, RunChannel] = field(default_factory=dict)
    nudge: Callable[[], None] = lambda: None
    """Wake the dispatcher (set by it)."""
    _mailbox: OrderedDict[str, SlotAdapterFinished] = field(default_factory=OrderedDict)
    _early_cancels: OrderedDict[str, None] = field(default_factory=OrderedDict)
    background: BackgroundTasks = field(default_factory=BackgroundTasks)

    def open(self, run_id: str) -> RunChannel:
        """The run's channel (made once; an end already delivered is put in it)."""
        channel = self.channels.get(run_id)
        if channel is None:
            channel = self.channels[run_id] = RunChannel(run_id)
            early = self._mailbox.pop(run_id, None)
            if early is not None:
                channel.end.set_result(early)
            if run_id in self._early_cancels:
                del self._early_cancels[run_id]
                channel.cancel.set()
        return channel

    def close_channel(self, run_id: str) -> None:
        """Forget a finished run's channel."""
        self.channels.pop(run_id, None)

    def deliver_end(self, run_id: str, event: SlotAdapterFinished) -> None:
        """The adapter of ``run_id`` ended (event-loop thread)."""
        channel = self.channels.get(run_id)
        if channel is None:
            self._mailbox[run_id] = event
            while len(self._mailbox) > _MAILBOX:
                self._mailbox.popitem(last=False)
            return
        if not channel.end.done():
            channel.end.set_result(event)

    def request_cancel(self, run_id: str) -> bool:
        """Signal the run's task to cancel; return whether a task was there to hear it.

        Without a channel yet (a cancel answered while the start's recovery is re-attaching the
        runs) the cancel is kept and set when the channel opens."""
        channel = self.channels.get(run_id)
        if channel is None:
            self._early_cancels[run_id] = None
            while len(self._early_cancels) > _MAILBOX:
                self._early_cancels.popitem(last=False)
            return False
        channel.cancel.set()
        return True

    def hand_over(self, run_ids: list[str]) -> None:
        """These runs now hold the workspace they waited for."""
        for run_id in run_ids:
            channel = self.channels.get(run_id)
            if channel is not None:
                channel.lease.set()

    def spawn(self, work: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        """Run ``work`` in the background; its failure is logged, never lost."""
        return self.background.spawn(work, name)

    @property
    def busy(self) -> int:
        """How many background tasks run."""
        return self.background.busy

    async def idle(self, timeout: float = 10.0) -> None:
        """Wait until no background task runs (tests)."""
        await self.background.idle(timeout)

    async def close(self, timeout: float = 1.0) -> None:
        """Cancel every run task and forget their channels (a stop, or a lost lease: the next
        holder's recovery re-attaches the runs from the store)."""
        await self.background.cancel_all(timeout)
        self.channels.clear()
        self._mailbox.clear()
        self._early_cancels.clear()
