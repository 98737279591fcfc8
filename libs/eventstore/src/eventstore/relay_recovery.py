"""How the outbox relay gets past failures: backoff, a deleted stream, an event that cannot go.

- :class:`Pacing`: the pause between retries (doubling up to a ceiling), cut short by a stop;
- :func:`stream_missing` / :func:`recreate_stream`: a publish failed because the event stream
  is gone, so it is created again with the settings the service started with;
- :func:`record_unpublishable`: a stored event can never be published (see
  :mod:`eventstore.publication`), so it is recorded as skipped, with the relay's position, in one
  transaction, retried until it is recorded or the relay stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import nats.js.errors

from eventstore.publication import UnpublishableEventError, record_skip, skips_id
from natsbus.jetstream import ensure_event_stream

if TYPE_CHECKING:
    from nats.js.client import JetStreamContext

    from contracts.subjects import ServiceToken
    from eventstore.application import ServiceApplication
    from eventstore.executor import StoreExecutor

__all__ = ["Pacing", "Unpublishable", "record_unpublishable", "recreate_stream", "stream_missing"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pacing:
    """Pauses between the relay's retries: 0.1 s doubling up to ``max_backoff``; a stop (the
    ``stopping`` event) ends any pause at once."""

    max_backoff: float
    stopping: asyncio.Event

    def backoff(self, attempt: int) -> float:
        """The pause before retry number ``attempt`` (1 for the first)."""
        return float(min(self.max_backoff, 0.1 * 2 ** min(attempt - 1, 16)))

    async def pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when the relay stops meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)


def stream_missing(error: Exception) -> bool:
    """True when a publish failed because no stream stores the subject (it was deleted)."""
    return isinstance(error, nats.js.errors.NoStreamResponseError | nats.js.errors.NotFoundError)


async def recreate_stream(
    js: JetStreamContext,
    service: str,
    *,
    duplicate_window: float,
    max_age: float,
    replicas: int = 1,
) -> None:
    """The event stream is gone: create it again with the settings the service started with
    (its replicas included).

    A failure is logged (the next publish attempt tries again), never raised.
    """
    try:
        await ensure_event_stream(
            js, duplicate_window=duplicate_window, max_age=max_age, replicas=replicas
        )
    except Exception:
        logger.warning(
            "outbox relay of %s: the event stream is missing and cannot be created yet",
            service,
            exc_info=True,
        )
    else:
        logger.warning(
            "outbox relay of %s: the event stream was missing; created it again", service
        )


@dataclass(frozen=True)
class Unpublishable:
    """A stored event that can never be published, and why."""

    notification_id: int
    origin: str
    event_type: str
    error: UnpublishableEventError


async def record_unpublishable(
    app: ServiceApplication,
    executor: StoreExecutor,
    service: ServiceToken,
    skipped: Unpublishable,
    pacing: Pacing,
) -> bool:
    """Record that ``skipped`` can never be published (with the relay's position), and log it.

    Returns:
        True once recorded; False when the relay stops first (the next start decides again).
    """
    logger.error(
        "outbox relay of %s: notification %s (%s) can never be published; skipped and "
        "recorded on aggregate %s: %s",
        service,
        skipped.notification_id,
        skipped.origin,
        skips_id(service),
        skipped.error,
    )
    attempt = 0
    while not pacing.stopping.is_set():
        try:
            await executor.run(
                partial(
                    record_skip,
                    app,
                    service=service,
                    notification_id=skipped.notification_id,
                    origin=skipped.origin,
                    event_type=skipped.event_type,
                    error=str(skipped.error),
                )
            )
        except Exception:
            attempt += 1
            logger.exception(
                "outbox relay of %s: recording the skip of notification %s failed",
                service,
                skipped.notification_id,
            )
            await pacing.pause(pacing.backoff(attempt))
            continue
        return True
    return False
