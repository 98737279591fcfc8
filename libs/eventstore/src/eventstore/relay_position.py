"""Where the outbox relay is: the notification last handled, the one recorded, the last saved.

:class:`RelayPosition` keeps the three numbers the relay moves on (handled in this process,
recorded durably as the tracking row :data:`eventstore.publication.OUTBOX_POSITION`, and the
latest notification a save reported), records the handled one, and lets a flush wait until
what was saved is handled and recorded.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from eventsourcing.persistence import Tracking

from eventstore.publication import OUTBOX_POSITION

if TYPE_CHECKING:
    from eventstore.application import ServiceApplication
    from eventstore.executor import StoreExecutor

__all__ = ["RelayPosition"]

logger = logging.getLogger(__name__)


class RelayPosition:
    """The outbox relay's position in its store's notification log."""

    def __init__(self, app: ServiceApplication, executor: StoreExecutor, service: str) -> None:
        """Start at nothing handled, recorded or seen; :meth:`load` reads the recorded one.

        Args:
            app: The service's application (its recorder holds the tracking row).
            executor: The store's thread.
            service: The service token, for logs.
        """
        self._app = app
        self._executor = executor
        self._service = service
        self.handled = 0
        """The last notification id handled (published or private) in this process."""
        self.recorded = 0
        """The last position recorded durably in the store."""
        self.latest = 0
        """The last notification id a save reported (or a read found)."""
        self._progress = asyncio.Condition()

    @property
    def lag(self) -> int:
        """How many notifications are saved but not handled yet (no store access)."""
        return max(0, self.latest - self.handled)

    def saw(self, notification_id: int) -> None:
        """Note that the store holds notifications up to ``notification_id``."""
        self.latest = max(self.latest, notification_id)

    def done_upto(self) -> int:
        """Handled and recorded up to this notification id."""
        return min(self.handled, self.recorded)

    async def load(self) -> None:
        """Read the recorded position and the last notification id from the store."""
        recorded = await self._executor.run(self._app.recorder.max_tracking_id, OUTBOX_POSITION)
        self.recorded = recorded or 0
        self.latest = await self._executor.run(self._app.last_notification_id)

    async def record(self) -> None:
        """Record the handled position (when it moved) and wake whoever waits for progress."""
        position = self.handled
        if position > self.recorded:
            tracking = Tracking(OUTBOX_POSITION, position)
            await self._executor.run(self._app.recorder.insert_tracking, tracking)
            self.recorded = position
        async with self._progress:
            self._progress.notify_all()

    async def record_quietly(self) -> None:
        """:meth:`record`, logging a failure instead of raising it (the next round retries)."""
        try:
            await self.record()
        except Exception:
            logger.exception("outbox relay of %s: recording its position failed", self._service)

    async def wait_until(self, target: int, timeout: float) -> bool:
        """Wait until notification ``target`` is handled and recorded.

        Args:
            target: The notification id to reach.
            timeout: Seconds to wait at most.

        Returns:
            True once reached; False on timeout (logged).
        """
        try:
            async with self._progress:
                await asyncio.wait_for(
                    self._progress.wait_for(lambda: self.done_upto() >= target), timeout
                )
        except TimeoutError:
            logger.warning(
                "outbox relay of %s: published up to %s of %s after %g s",
                self._service,
                self.done_upto(),
                target,
                timeout,
            )
            return False
        return True
