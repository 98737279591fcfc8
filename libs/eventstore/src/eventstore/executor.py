"""One dedicated thread for the (synchronous) event store, awaited from async code.

Every call on a service's application goes through the same thread, so saves, projections, queries
on read models and the relay's reads never run concurrently; the caller's context variables (the
:class:`~eventstore.cause.Cause`, the OpenTelemetry context) are copied into that thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["StoreExecutor"]

T = TypeVar("T")


class StoreExecutor:
    """A single worker thread running store calls in submission order."""

    def __init__(self, name: str = "eventstore") -> None:
        """Start nothing yet; the thread is created with the first call.

        Args:
            name: The thread's name prefix (shows in logs and thread dumps).
        """
        self.name = name
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

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

        Cancelling the caller does not stop ``fn`` once it has started: store calls run to the end.
        """
        if self._closed:
            raise RuntimeError(f"store executor {self.name!r} is closed")
        context = contextvars.copy_context()
        call = functools.partial(context.run, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def close(self, *, wait: bool = True) -> None:
        """Stop taking calls; with ``wait``, let the queued ones finish first.

        Args:
            wait: Block until the thread has finished its queue.
        """
        self._closed = True
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
