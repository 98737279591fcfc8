"""A command's output written to its operation's files as it comes, so the page and the byte-range
endpoint can follow a job or a provision command while it runs.

Whole lines (ended by ``\\n`` or ``\\r``, as a progress bar redraws) are written with URL
credentials and query strings hidden; a partial line is held until it ends, or written once it
grows past :data:`_HOLD` bytes. At most :data:`LIVE_LIMIT` bytes of a stream are written live:
when the command ends its operation's files are replaced by the capped, scrubbed tails anyway.
Writing never fails the command: a file that cannot be written is given up (and logged once).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Final

from telemetry import scrub_url_secrets

__all__ = ["LIVE_LIMIT", "LiveFile", "live_files"]

log = logging.getLogger(__name__)

LIVE_LIMIT: Final = 8 * 1024 * 1024
"""Bytes of one stream written while the command runs."""
_HOLD: Final = 4096
"""Bytes of an unended line held back before it is written as it is."""


class LiveFile:
    """Appends one stream's output to ``path`` (created, never followed if a symlink)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._pending = bytearray()
        self._written = 0
        self._fd: int | None = None
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
            self._fd = os.open(path, flags, 0o600)
        except OSError as exc:
            log.warning("live output %s cannot be written: %s", path, exc)

    def write(self, chunk: bytes) -> None:
        """Take ``chunk``; write the lines it ends."""
        if self._fd is None:
            return
        self._pending += chunk
        end = max(self._pending.rfind(b"\n"), self._pending.rfind(b"\r"))
        if end >= 0:
            self._emit(bytes(self._pending[: end + 1]))
            del self._pending[: end + 1]
        if len(self._pending) > _HOLD:
            self._emit(bytes(self._pending))
            self._pending.clear()

    def close(self) -> None:
        """Write what is held and close the file."""
        if self._fd is None:
            return
        if self._pending:
            self._emit(bytes(self._pending))
            self._pending.clear()
        os.close(self._fd)
        self._fd = None

    def _emit(self, data: bytes) -> None:
        text = data.decode("utf-8", errors="surrogateescape")
        out = str(scrub_url_secrets(text)).encode("utf-8", errors="surrogateescape")
        room = LIVE_LIMIT - self._written
        if room <= 0 or self._fd is None:
            return
        out = out[:room]
        try:
            os.write(self._fd, out)
        except OSError as exc:
            log.warning("live output %s given up: %s", self._path, exc)
            os.close(self._fd)
            self._fd = None
            return
        self._written += len(out)


def live_files(directory: Path | None) -> tuple[LiveFile | None, LiveFile | None]:
    """The stdout and stderr writers of an operation's output directory (created if missing);
    ``(None, None)`` without one."""
    if directory is None:
        return None, None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        log.warning("live output directory %s cannot be made: %s", directory, exc)
        return None, None
    return LiveFile(directory / "stdout"), LiveFile(directory / "stderr")
