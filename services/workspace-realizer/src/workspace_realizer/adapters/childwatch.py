"""Event-loop watchers of one child process: its output pipes, its stdin, its exit.

The pipes are non-blocking descriptors read and written with loop readers and writers; the exit is
a ``pidfd`` (a thread calling ``waitpid`` where pidfds are missing). Each watcher is removed once
only: after a close, its descriptor number may already belong to another child.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
from collections.abc import Callable
from typing import IO

from servicekit.pipes import CHUNK, OutputSink, follow_pipe

__all__ = ["CHUNK", "ChildWatch", "OutputSink"]


class ChildWatch:
    """Event-loop watchers of one child: its output pipes, its stdin, its exit."""

    def __init__(self, loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes]) -> None:
        self.loop = loop
        self.proc = proc
        self.waits: list[asyncio.Future[None]] = []
        self._cleanups: list[Callable[[], None]] = []

    def _future(self) -> asyncio.Future[None]:
        future: asyncio.Future[None] = self.loop.create_future()
        self.waits.append(future)
        return future

    def read(self, pipe: IO[bytes] | None, sink: OutputSink) -> None:
        """Feed ``sink`` from ``pipe`` until its end (a future in :attr:`waits`)."""
        if pipe is None:
            return
        done, finish = follow_pipe(self.loop, pipe, sink)
        self.waits.append(done)
        self._cleanups.append(finish)

    def write(self, pipe: IO[bytes] | None, data: bytes) -> None:
        """Write ``data`` to ``pipe``, then close it (a future in :attr:`waits`)."""
        if pipe is None:
            return
        fd, done, view = pipe.fileno(), self._future(), memoryview(data)
        os.set_blocking(fd, False)
        sent = 0

        def finish() -> None:
            if done.done():
                return
            self.loop.remove_writer(fd)
            with contextlib.suppress(OSError):
                pipe.close()
            done.set_result(None)

        def writable() -> None:
            nonlocal sent
            try:
                while sent < len(view):
                    sent += os.write(fd, view[sent : sent + CHUNK])
            except BlockingIOError:
                return
            except OSError:  # the child closed its stdin
                pass
            finish()

        self.loop.add_writer(fd, writable)
        self._cleanups.append(finish)

    def exit(self) -> None:
        """Reap the child when it exits (the last future in :attr:`waits`)."""
        done = self._future()

        def reaped() -> bool:
            if self.proc.poll() is None:
                return False
            if not done.done():
                done.set_result(None)
            return True

        try:
            pidfd = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            self._exit_thread(done)
            return

        closed = False

        def readable() -> None:
            if reaped():
                stop()

        def stop() -> None:
            nonlocal closed
            if closed:  # once only, as for the pipes
                return
            closed = True
            self.loop.remove_reader(pidfd)
            with contextlib.suppress(OSError):
                os.close(pidfd)

        self.loop.add_reader(pidfd, readable)
        self._cleanups.append(stop)
        if reaped():
            stop()

    def _exit_thread(self, done: asyncio.Future[None]) -> None:
        def resolve() -> None:
            if not done.done():
                done.set_result(None)

        def wait() -> None:
            self.proc.wait()
            with contextlib.suppress(RuntimeError):  # the loop is closed
                self.loop.call_soon_threadsafe(resolve)

        threading.Thread(target=wait, name=f"waitpid-{self.proc.pid}", daemon=True).start()

    def close(self) -> None:
        """Drop every watcher that is still registered (idempotent)."""
        for cleanup in self._cleanups:
            with contextlib.suppress(Exception):
                cleanup()
        self._cleanups.clear()
