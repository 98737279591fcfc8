"""One dedicated thread for the (synchronous) event store, awaited from async code.

Every call on a service's application goes through the same thread, so saves, projections, queries
on read models and the relay's reads never run concurrently; the caller's context variables (the
:class:`~eventstore.cause.Cause`, the OpenTelemetry context) are copied into that thread.

The thread is a daemon: a store call still running when the process ends (after the bounded
:meth:`StoreExecutor.shutdown`) cannot hold the exit up. A write cut short that way is a crash as
far as the store is concerned, which it is built to survive.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["StoreExecutor"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

_Item = tuple[Future[Any], Callable[[], Any]] | None


class StoreExecutor:
    """A single worker thread running store calls in submission order."""

    def __init__(self, name: str = "eventstore") -> None:
        """Start nothing yet; the thread is created with the first call.

        Args:
            name: The thread's name (shows in logs and thread dumps).
        """
        self.name = name
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` or :meth:`shutdown` was called."""
        return self._closed

    def _submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        context = contextvars.copy_context()
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"store executor {self.name!r} is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._thread.start()
            self._queue.put((future, functools.partial(context.run, fn, *args, **kwargs)))
        return future

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            future, call = item
            if not future.set_running_or_notify_cancel():
                continue  # its caller gave up before it started
            try:
                result = call()
            except BaseException as exc:  # handed to the caller, who decides
                future.set_exception(exc)
            else:
                future.set_result(result)
            del item, future, call

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on the store thread, in a copy of the current context.

        Args:
            fn: A synchronous callable.
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            What ``fn`` returned.

        Raises:
            RuntimeError: The executor is closed.
            Exception: Whatever ``fn`` raised.

        Cancelling the caller before ``fn`` starts skips it; once it has started, it runs to the
        end (store calls are never interrupted halfway).
        """
        return await asyncio.wrap_future(self._submit(fn, *args, **kwargs))

    def _stop_thread(self, last: Callable[[], Any] | None) -> Future[Any] | None:
        """Refuse new calls; queue ``last`` behind every queued call, then the thread's end.

        Returns None when there is nothing to wait for (closed before, or no thread ever ran;
        ``last`` then runs at once, here).
        """
        with self._lock:
            if self._closed:
                return None
            self._closed = True
            if self._thread is None:
                if last is not None:
                    last()
                return None
            future: Future[Any] = Future()
            self._queue.put((future, last or (lambda: None)))
            self._queue.put(None)
            return future

    def close(self, *, wait: bool = True, timeout: float | None = None) -> bool:
        """Stop taking calls; the queued ones still run, in order.

        Args:
            wait: Block until the queue is done (at most ``timeout`` seconds).
            timeout: Seconds to wait at most (None: no limit).

        Returns:
            True when the queue is done (without ``wait``: only if it already was).
        """
        self._stop_thread(None)
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        if wait:
            thread.join(timeout)
        return not thread.is_alive()

    async def shutdown(self, timeout: float, *, last: Callable[[], Any] | None = None) -> bool:
        """Stop taking calls, let the queued ones finish, then run ``last`` (the store's close).

        Waits at most ``timeout`` seconds without blocking the event loop. Calls still queued then
        keep running on the (daemon) thread, ``last`` after them, unless the process ends first.

        Args:
            timeout: Seconds to wait for the queue and ``last``.
            last: Runs on the store thread after every queued call (e.g. ``app.close``).

        Returns:
            True when everything, ``last`` included, ran within ``timeout`` (a failure of ``last``
            is logged).
        """
        try:
            done = self._stop_thread(last)
        except Exception:
            logger.exception("closing the store failed", extra={"executor": self.name})
            return True
        if done is None:
            return True
        loop = asyncio.get_running_loop()
        finished = asyncio.Event()

        def on_done(_: Future[Any]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                loop.call_soon_threadsafe(finished.set)

        done.add_done_callback(on_done)
        try:
            await asyncio.wait_for(finished.wait(), max(timeout, 0.0))
        except TimeoutError:
            logger.warning(
                "store calls still running after %.2f s; the store closes when they end",
                timeout,
                extra={"executor": self.name},
            )
            return False
        if (error := done.exception()) is not None:
            logger.error("closing the store failed", exc_info=error, extra={"executor": self.name})
        return True
