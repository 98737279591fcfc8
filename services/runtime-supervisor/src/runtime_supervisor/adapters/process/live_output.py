"""A command's output written to its operation's files as it comes, so the page and the byte-range
endpoint can follow a job or a provision command while it runs.

Whole lines (ended by ``\\n`` or ``\\r``, as a progress bar redraws) are written with URL
credentials and query strings hidden; a partial line is held until it ends. One that grows past
:data:`_HOLD` bytes is written up to its last blank (a URL is never cut, so it is still
scrubbed whole); one with no blank is held up to :data:`_HOLD_MAX` bytes, then dropped with a
marker rather than written unscrubbed. At most :data:`LIVE_LIMIT` bytes of a stream are written live:
when the command ends its operation's files are replaced by the capped, scrubbed tails anyway.
Writing never fails the command: a file that cannot be written is given up (and logged once).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Final

from telemetry import scrub_url_secrets

__all__ = ["LIVE_LIMIT", "LiveFile", "live_files"]

log = logging.getLogger(__name__)

LIVE_LIMIT: Final = 8 * 1024 * 1024
"""Bytes of one stream written while the command runs."""
_HOLD: Final = 4096
"""Bytes of an unended line held back before its words so far are written."""
_HOLD_MAX: Final = 64 * 1024
"""Bytes of an unended line without a blank held before it is dropped (never written unscrubbed)."""
_BLANKS: Final = re.compile(rb"[ \t\"'<>]")


class LiveFile:
    """Appends one stream's output to ``path`` (created, never followed if a symlink; opened in
    ``directory_fd`` when given, so the directory cannot be swapped meanwhile)."""

    def __init__(self, path: Path, directory_fd: int | None = None) -> None:
        self._path = path
        self._pending = bytearray()
        self._written = 0
        self._fd: int | None = None
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
            if directory_fd is None:
                self._fd = os.open(path, flags, 0o600)
            else:
                self._fd = os.open(path.name, flags, 0o600, dir_fd=directory_fd)
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
            cut = max((m.end() for m in _BLANKS.finditer(self._pending)), default=0)
            if cut:
                self._emit(bytes(self._pending[:cut]))
                del self._pending[:cut]
            elif len(self._pending) > _HOLD_MAX:
                self._emit(b"[clipyard] a long line without a blank was left out here\n")
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


def live_files(
    directory: Path | None, *, create: bool = True
) -> tuple[LiveFile | None, LiveFile | None]:
    """The stdout and stderr writers of an operation's output directory; ``(None, None)``
    without one, or when it is not a real directory (a link is never followed). ``create``:
    make it if missing (the supervisor's own jobs); else it must exist (the realizer made it for
    the step it began)."""
    if directory is None:
        return None, None
    try:
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        log.warning("live output directory %s cannot be used: %s", directory, exc)
        return None, None
    try:
        return LiveFile(directory / "stdout", fd), LiveFile(directory / "stderr", fd)
    finally:
        os.close(fd)
