"""A child's output pipe read on the event loop: a non-blocking descriptor with a loop reader,
no thread and no ``asyncio.subprocess`` (whose transports need the loop's child watcher).

Used by the realizer's child watchers and the supervisor's jobs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import IO, Final, Protocol

__all__ = ["CHUNK", "OutputSink", "follow_pipe"]

CHUNK: Final = 64 * 1024
"""Bytes read at most per read."""
_READS_PER_WAKEUP: Final = 16
"""Reads per wakeup at most: a chatty child must not starve the loop."""


class OutputSink(Protocol):
    """Receives what a pipe delivers."""

    def feed(self, chunk: bytes) -> None:
        """Take one chunk."""


def follow_pipe(
    loop: asyncio.AbstractEventLoop, pipe: IO[bytes], sink: OutputSink
) -> tuple[asyncio.Future[None], Callable[[], None]]:
    """Feed ``sink`` from ``pipe`` until its end.

    Returns:
        A future resolved at the pipe's end (or at the cleanup), and the cleanup: it removes the
        reader and closes the pipe, once only (after the close, the descriptor number may already
        belong to another pipe), and may be called any number of times.
    """
    fd, done = pipe.fileno(), loop.create_future()
    os.set_blocking(fd, False)

    def finish() -> None:
        if done.done():
            return
        loop.remove_reader(fd)
        pipe.close()
        done.set_result(None)

    def readable() -> None:
        for _ in range(_READS_PER_WAKEUP):
            try:
                chunk = os.read(fd, CHUNK)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                finish()
                return
            sink.feed(chunk)

    loop.add_reader(fd, readable)
    return done, finish
