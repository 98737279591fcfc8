"""What the endpoint classes share: the hooks the orchestration passes them (coroutines; plain
functions work too)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from contracts.agents import WakeAccepted

__all__ = ["OnAgentDeleted", "OnCancel", "OnWake", "call_hook"]

OnWake = Callable[[WakeAccepted], Awaitable[None]]
"""Awaited after each accepted wake (queued, coalesced or repeated): the dispatcher looks at the
queue."""
OnCancel = Callable[[str], Awaitable[None]]
"""Awaited with a running run's id after its cancel request was saved: its task stops at the
next stage boundary, or kills the launched adapter. Not called for a queued run (it ended
``cancelled`` at once)."""
OnAgentDeleted = Callable[[list[str]], Awaitable[None]]
"""Awaited after an agent's delete with the ids of its running runs, now cancel-requested (its
queued runs ended ``cancelled`` in the delete)."""


async def call_hook(hook: Callable[..., Any] | None, *args: Any) -> None:
    """Call ``hook(*args)`` if given, awaiting what it returns when that is awaitable."""
    if hook is None:
        return
    result = hook(*args)
    if inspect.isawaitable(result):
        await result
