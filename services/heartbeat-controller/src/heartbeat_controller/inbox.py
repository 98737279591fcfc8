"""The controller's inboxes: the realizer's issue facts and the supervisor's adapter ends.

Both handlers run on the store's thread inside the inbox (``eventstore.Inbox``) and save with the
upstream position, in one transaction. After the save they only hand over
(``loop.call_soon_threadsafe``): an issue event nudges the dispatcher (a wake by assignment, a
workspace link may let a run start); an adapter's end goes to the run's waiting task. Other events
are left to the inbox, which records their position. Each handler is one ``match`` over the
event type of its upstream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from contracts.base import Event
from contracts.slot_events import SlotAdapterFinished
from servicekit.handover import HandOver

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from heartbeat_controller.application import HeartbeatControllerApplication

__all__ = ["HandOffs", "RunHandOffs", "realizer_inbox", "supervisor_inbox"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunHandOffs:
    """The orchestration's hooks the inboxes hand over to, on its loop."""

    loop: asyncio.AbstractEventLoop
    nudge: Callable[[], None]
    """Wake the dispatcher."""
    deliver_end: Callable[[str, SlotAdapterFinished], None]
    """Hand an adapter's end to its run."""

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the orchestration's loop (from the store's thread)."""
        if self.loop.is_closed():
            return
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop closed meanwhile: a stop, nothing to wake
            log.debug("loop closed; hand-over dropped")


HandOffs = HandOver[RunHandOffs]
"""The hooks, set by ``register`` once the orchestration runs (the handlers wait for them)."""


def realizer_inbox(
    hooks: HandOffs,
) -> Callable[[HeartbeatControllerApplication, Any, Tracking], None]:
    """The handler of the realizer's events (``ServiceSpec.upstreams["realizer"]``): issue
    copies (assignee, current workspace, status); an assignment wakes the agent in that save."""

    def handle(app: HeartbeatControllerApplication, event: Any, tracking: Tracking) -> None:
        match event:
            case Event(aggregate="issue"):
                app.note_issue_event(event, tracking)
                handoffs = hooks.get()
                handoffs.call_soon(handoffs.nudge)
            case _:
                return

    return handle


def supervisor_inbox(
    hooks: HandOffs,
) -> Callable[[HeartbeatControllerApplication, Any, Tracking], None]:
    """The handler of the supervisor's events (``ServiceSpec.upstreams["supervisor"]``): an
    adapter's end is recorded on its run, then handed to the run's task."""

    def handle(app: HeartbeatControllerApplication, event: Any, tracking: Tracking) -> None:
        match event:
            case SlotAdapterFinished():
                app.record_adapter_end(event, tracking)
                if event.run_id:
                    handoffs = hooks.get()
                    handoffs.call_soon(handoffs.deliver_end, event.run_id, event)
            case _:
                return

    return handle
