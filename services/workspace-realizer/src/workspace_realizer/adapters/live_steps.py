"""Steps shown while they run: a sink that can record a long step as it begins and report how far
it has come (the realizer's ``StepRecorder``), and the call runners make when they have one."""

from __future__ import annotations

from typing import Protocol

from workspace_realizer.adapters.ports import Phase, StepSink

__all__ = ["LiveStepSink", "begin_step"]


class LiveStepSink(StepSink, Protocol):
    """A sink that can also show a long step while it runs: :meth:`begin` records it
    ``running`` (its output files exist from then on and may grow), :meth:`progress` says how
    far it has come, and the step given to ``__call__`` afterwards ends it."""

    async def begin(self, *, phase: Phase, command: str, cwd: str) -> str:
        """Record the step as begun; return its id (its output directory's name)."""
        ...

    async def progress(self, phase: Phase, message: str, percent: int | None = None) -> None:
        """Report how far the step of ``phase`` has come (reports closer than a second apart
        with the same message are dropped)."""
        ...


async def begin_step(sink: StepSink | None, *, phase: Phase, command: str, cwd: str) -> str | None:
    """:meth:`LiveStepSink.begin` when ``sink`` is one, else None (the step shows when it ends)."""
    begin = getattr(sink, "begin", None)
    if begin is None:
        return None
    ref: str = await begin(phase=phase, command=command, cwd=cwd)
    return ref
