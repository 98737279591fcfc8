"""Waiting for JetStream to be there: a starting service's first stream call, retried while a
NATS cluster has no JetStream meta leader yet (fewer than a majority of its servers up, or an
election under way), and only then (:func:`natsbus.jetstream.ensure_event_stream`'s ``wait``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import nats.errors
import nats.js.errors

__all__ = ["EventStreamUnavailableError", "described", "unavailable", "wait_for_jetstream"]

logger = logging.getLogger("natsbus.jetstream")

T = TypeVar("T")

_JETSTREAM_UNAVAILABLE: Final = 10008
"""JetStream's error code (status 503) for "JetStream system temporarily unavailable": a cluster
without a meta leader (fewer than a majority of its servers up, or an election under way)."""

_FIRST_RETRY: Final = 0.1
_MAX_RETRY: Final = 2.0


class EventStreamUnavailableError(Exception):
    """JetStream was not available within the wait given to
    :func:`natsbus.jetstream.ensure_event_stream`."""


def unavailable(error: BaseException) -> bool:
    """True for the errors of a JetStream that is not there yet, and only those: status 503 with
    code 10008 (a cluster without a meta leader), no responders (nats.py: a bare
    ``ServiceUnavailableError``), timeouts and a connection in the middle of reconnecting. Any
    other refusal (another 503 such as JetStream disabled for the account, too many replicas, a
    bad setting) is an answer, not an absence."""
    if isinstance(error, nats.js.errors.APIError):
        if error.err_code == _JETSTREAM_UNAVAILABLE:
            return True
        return isinstance(error, nats.js.errors.ServiceUnavailableError) and (
            error.code is None and error.err_code is None
        )
    return isinstance(
        error,
        TimeoutError | nats.errors.NoRespondersError | nats.errors.ConnectionReconnectingError,
    )


def described(error: BaseException) -> str:
    """A short account of a JetStream error for the log."""
    if isinstance(error, nats.js.errors.APIError):
        if error.code is None and error.err_code is None:
            return "no responders"
        return f"{error.code} {error.description} (code {error.err_code})"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


async def wait_for_jetstream(attempt: Callable[[], Awaitable[T]], *, wait: float, stream: str) -> T:
    """``await attempt()``, tried again while JetStream is not there (:func:`unavailable`): after
    0.1 s, doubling up to 2 s, for at most ``wait`` seconds (which bound each try as well), with
    one warning saying what it waits for and one line when JetStream answers.

    Raises:
        EventStreamUnavailableError: JetStream did not answer within ``wait``; logged.
        Exception: Whatever ``attempt`` raised that is not an absence of JetStream, at once.
    """
    started = time.monotonic()
    deadline = started + wait
    pause = _FIRST_RETRY
    warned = False
    while True:
        try:
            # The wait bounds every try too: a request to an absent JetStream times out in 5 s.
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
                result = await attempt()
        except Exception as error:
            if not unavailable(error):
                raise
            left = deadline - time.monotonic()
            if left <= 0:
                raise _gave_up(stream, wait, error) from error
            if not warned:
                logger.warning(
                    "stream %s: JetStream is not available yet (%s); waiting up to %g s for it "
                    "(a cluster answers once a majority of its servers is up and has elected a "
                    "JetStream meta leader)",
                    stream,
                    described(error),
                    wait,
                    extra={"stream": stream, "wait": wait},
                )
                warned = True
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, _MAX_RETRY)
            continue
        if warned:
            logger.info(
                "stream %s: JetStream answered after %.1f s",
                stream,
                time.monotonic() - started,
                extra={"stream": stream},
            )
        return result


def _gave_up(stream: str, wait: float, error: BaseException) -> EventStreamUnavailableError:
    message = (
        f"JetStream was not available within {wait:g} s (last: {described(error)}), "
        f"so stream {stream} cannot be made: check that the NATS servers run "
        "with JetStream and that a majority of a cluster's servers are up and "
        "routed to one another"
    )
    logger.error(message, extra={"stream": stream, "waited": round(wait, 1)})
    return EventStreamUnavailableError(message)
