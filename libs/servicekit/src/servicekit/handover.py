"""What a service's ``register`` hook hands to its inbox handlers.

The inboxes start before ``register`` runs, and their handlers run on the store's thread: a
message may be handled before the orchestration that must hear of it exists. A handler that needs
a hook of the orchestration asks for it with :meth:`HandOver.get`, which waits until ``register``
has :meth:`HandOver.set` it (the application itself needs no hand-over: every handler is given it).
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

__all__ = ["HandOver"]

T = TypeVar("T")


class HandOver(Generic[T]):
    """One value, set once by ``register`` on the loop, read by handlers on the store's thread."""

    def __init__(self, what: str) -> None:
        """``what`` names the value in the error of a :meth:`get` that waited in vain."""
        self._what = what
        self._value: T | None = None
        self._ready = threading.Event()

    def set(self, value: T) -> None:
        """Hand ``value`` over."""
        self._value = value
        self._ready.set()

    def get(self, timeout: float = 30.0) -> T:
        """The value, once set (waits up to ``timeout`` seconds).

        Raises:
            RuntimeError: It was not set in time.
        """
        if not self._ready.wait(timeout) or self._value is None:
            raise RuntimeError(f"{self._what} is not ready yet")
        return self._value
