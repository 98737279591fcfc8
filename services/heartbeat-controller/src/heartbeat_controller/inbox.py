"""The controller's inboxes: the realizer's issue facts and the supervisor's adapter ends.

Both handlers run on the store's thread inside the inbox (``eventstore.Inbox``) and save with the
upstream position, in one transaction. After the save they only hand over
(``loop.call_soon_threadsafe``): an issue event nudges the dispatcher (a wake by assignment, a
workspace link may let a run start); an adapter's end goes to the run's waiting task. Other events
are left to the inbox, which records their position.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contracts.slot_events import SlotAdapterFinished

if TYPE_CHECKING:
    import asyncio

    from eventsourcing.persistence import Tracking

__all__ = ["AppHolder", "realizer_inbox", "supervisor_inbox"]

log = logging.getLogger(__name__)


class AppHolder:
    """Hands the running application and the orchestration's hooks to the inbox handlers,
    which ``ServiceSpec`` builds before either exists. The ``register`` hook calls :meth:`set`
    first thing: an inbox message may already be waiting on the store's thread."""

    def __init__(self) -> None:
        self._app: Any = None
        self._ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.nudge: Callable[[], None] = lambda: None
        """Wake the dispatcher (event-loop thread)."""
        self.deliver_end: Callable[[str, SlotAdapterFinished], None] = lambda run_id, end: None
        """Hand an adapter's end to its run (event-loop thread)."""

    def set(
        self,
        app: Any,
        loop: asyncio.AbstractEventLoop,
        *,
        nudge: Callable[[], None],
        deliver_end: Callable[[str, SlotAdapterFinished], None],
    ) -> None:
        """The application runs, with its orchestration on ``loop``."""
        self._app = app
        self.loop = loop
        self.nudge = nudge
        self.deliver_end = deliver_end
        self._ready.set()

    def get(self, timeout: float = 30.0) -> Any:
        """The application (waits up to ``timeout`` seconds for :meth:`set`)."""
        if not self._ready.wait(timeout) or self._app is None:
            raise RuntimeError("the heartbeat-controller application is not running yet")
        return self._app

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the orchestration's loop (from the store's thread)."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop closed meanwhile: a stop, nothing to wake
            log.debug("loop closed; hand-over dropped")


_ISSUE_AGGREGATE = "issue"


def realizer_inbox(holder: AppHolder) -> Callable[[Any, Tracking], None]:
    """The handler of the realizer's events (``ServiceSpec.upstreams["realizer"]``): issue
    copies (assignee, current workspace, status); an assignment wakes the agent in that save."""

    def handle(event: Any, tracking: Tracking) -> None:
        if getattr(event, "aggregate", None) != _ISSUE_AGGREGATE:
            return
        holder.get().note_issue_event(event, tracking)
        holder.call_soon(holder.nudge)

    return handle


def supervisor_inbox(holder: AppHolder) -> Callable[[Any, Tracking], None]:
    """The handler of the supervisor's events (``ServiceSpec.upstreams["supervisor"]``): an
    adapter's end is recorded on its run, then handed to the run's task."""

    def handle(event: Any, tracking: Tracking) -> None:
        if not isinstance(event, SlotAdapterFinished):
            return
        holder.get().record_adapter_end(event, tracking)
        if event.run_id:
            holder.call_soon(holder.deliver_end, event.run_id, event)

    return handle
