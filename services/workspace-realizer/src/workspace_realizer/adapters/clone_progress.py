"""git's own progress of a clone (``git clone --progress``), read from its stderr as it comes:
``Receiving objects:  45% (450/1000), 1.2 MiB | 3.4 MiB/s`` becomes the phase ``Receiving
objects`` at 45 %. git redraws a line with ``\\r`` and ends it with ``\\n``; ``remote:`` lines
(the server counting and compressing) are phases too."""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Final

from workspace_realizer.adapters.ports import StepSink

__all__ = ["CloneProgress", "report_while"]

_LINE: Final = re.compile(rb"^(?:remote: )?([A-Z][A-Za-z ]+?):\s+(\d{1,3})%")
_EVERY: Final = 1.0
"""Seconds between two reports."""


class CloneProgress:
    """The last phase and percent git printed (fed with stderr chunks)."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.percent: int | None = None
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        """Take a chunk of stderr; keep the last progress line it completes or redraws."""
        data = self._partial + chunk
        lines = re.split(rb"[\r\n]", data)
        self._partial = lines.pop()[-512:]
        for line in lines:
            match = _LINE.match(line.strip())
            if match:
                self.phase = match.group(1).decode("ascii", "replace")
                self.percent = min(100, int(match.group(2)))


async def report_while(progress: CloneProgress, sink: StepSink, stop: asyncio.Event) -> None:
    """Report ``progress`` on ``sink`` (when it takes progress) every second until ``stop``,
    and once more then (a clone shorter than a second still shows where it ended)."""
    report = getattr(sink, "progress", None)
    if report is None:
        await stop.wait()
        return
    shown: tuple[str | None, int | None] = (None, None)
    while True:
        stopped = stop.is_set()
        if progress.phase is not None and (progress.phase, progress.percent) != shown:
            shown = (progress.phase, progress.percent)
            await report("managed_clone", progress.phase, progress.percent)
        if stopped:
            return  # the last progress git printed was reported
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), _EVERY)
