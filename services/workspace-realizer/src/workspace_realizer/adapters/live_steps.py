"""Steps shown while they run: a sink that can record a long step as it begins and report how far
it has come (the realizer's ``StepRecorder``), and the call runners make when they have one."""

from __future__ import annotations

import logging
from typing import Protocol

from workspace_realizer.adapters.ports import Phase, StepSink

__all__ = ["KEPT_OUTPUT", "LiveStepSink", "abandon_step", "begin_step"]

log = logging.getLogger(__name__)

KEPT_OUTPUT = "outputKept"
"""Step metadata: the step's output is what was written while it ran (the runner got none back),
so its files are kept and the step's stderr (the runner's note) is added to them."""


class LiveStepSink(StepSink, Protocol):
    """A sink that can also show a long step while it runs: :meth:`begin` records it
    ``running`` (its output files exist from then on and may grow), :meth:`progress` says how
    far it has come, and the step given to ``__call__`` afterwards ends it."""

    async def begin(self, *, phase: Phase, command: str, cwd: str) -> str:
        """Record the step as begun; return its id (its output directory's name)."""
        ...

    async def progress(self, phase: Phase, message: str, percent: int | None = None) -> None:
        """Report how far the step of ``phase`` has come (best effort: a report that cannot
        be stored never fails the step)."""
        ...

    async def abandon(self, phase: Phase, why: str) -> None:
        """End ``failed`` the step of ``phase`` begun and not ended (its runner failed)."""
        ...


async def begin_step(sink: StepSink | None, *, phase: Phase, command: str, cwd: str) -> str | None:
    """:meth:`LiveStepSink.begin` when ``sink`` is one, else None (the step shows when it ends)."""
    begin = getattr(sink, "begin", None)
    if begin is None:
        return None
    ref: str = await begin(phase=phase, command=command, cwd=cwd)
    return ref


async def abandon_step(sink: StepSink | None, phase: Phase, why: str) -> None:
    """:meth:`LiveStepSink.abandon` when ``sink`` is one: called by a runner whose step began
    and then failed or was cancelled before it could be reported (never raises: the runner's
    own error is the one that matters)."""
    abandon = getattr(sink, "abandon", None)
    if abandon is None:
        return
    try:
        await abandon(phase, why)
    except Exception as error:  # the caller re-raises its own error
        log.warning("a begun %s step could not be ended: %s", phase, error)
