"""Reading a service's log file: its last lines, or a byte range (at most 256 KiB at a time).

A missing log file reads as empty (a service that never wrote anything, or whose run directory
was cleaned). Text is decoded as UTF-8 with replacement characters. A range ends before a
character its last bytes begin but do not finish (``length`` says so), so a reader that follows
the log by ranges, each from where the last ended, never sees a character cut in two; a range
that holds nothing else keeps those bytes, so every read moves on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_READ", "LogSlice", "read_range", "tail_bytes", "tail_lines"]

MAX_READ = 256 * 1024
_BLOCK = 64 * 1024


@dataclass(frozen=True, kw_only=True)
class LogSlice:
    """``length`` bytes of the log from byte ``offset`` (as ``text``); ``size`` of the whole file."""

    text: str
    offset: int
    length: int
    size: int


def _read(path: Path, offset: int, length: int) -> tuple[bytes, int]:
    """Up to ``length`` bytes from ``offset`` and the file's size (0 for a missing file)."""
    try:
        with path.open("rb") as log:
            size = log.seek(0, os.SEEK_END)
            log.seek(min(offset, size))
            return log.read(length), size
    except FileNotFoundError:
        return b"", 0


def _slice(data: bytes, offset: int, size: int) -> LogSlice:
    return LogSlice(
        text=data.decode("utf-8", errors="replace"), offset=offset, length=len(data), size=size
    )


def read_range(path: Path, offset: int, length: int) -> LogSlice:
    """``length`` bytes of the log from ``offset`` (fewer at its end).

    Raises:
        ValueError: A negative offset, a length outside 1..256 KiB, or an offset past the end.
    """
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, not {offset}")
    if not 1 <= length <= MAX_READ:
        raise ValueError(f"length must be between 1 and {MAX_READ} bytes, not {length}")
    data, size = _read(path, offset, length)
    if offset > size:
        raise ValueError(f"offset {offset} is past the end of the log ({size} bytes)")
    return _slice(_whole_characters(data), offset, size)


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character its end begins but does not finish (unless that is
    all it holds)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:  # ASCII: nothing unfinished after it
            return data
        if byte >= 0xC0:  # the lead byte of the last character
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data[:-back] if back < needed and len(data) > back else data
    return data


def tail_bytes(path: Path, length: int = 64 * 1024) -> LogSlice:
    """The last ``length`` bytes of the log (at most 256 KiB)."""
    if not 1 <= length <= MAX_READ:
        raise ValueError(f"length must be between 1 and {MAX_READ} bytes, not {length}")
    _probe, size = _read(path, 0, 0)
    offset = max(0, size - length)
    data, size = _read(path, offset, length)
    return _slice(data, offset, size)


def tail_lines(path: Path, n: int) -> LogSlice:
    """The last ``n`` lines of the log (a last line without a newline counts), at most 256 KiB.

    Raises:
        ValueError: ``n`` is less than 1.
    """
    if n < 1:
        raise ValueError(f"the number of lines must be 1 or more, not {n}")
    try:
        log = path.open("rb")
    except FileNotFoundError:
        return _slice(b"", 0, 0)
    with log:
        size = log.seek(0, os.SEEK_END)
        end = size
        buffer = b""
        log.seek(max(0, size - 1))
        # A trailing newline ends the last line; it does not start another.
        wanted = n + 1 if log.read(1) == b"\n" else n
        while end > 0 and buffer.count(b"\n") < wanted and len(buffer) < MAX_READ:
            start = max(0, end - _BLOCK)
            log.seek(start)
            buffer = log.read(end - start) + buffer
            end = start
    cut = len(buffer)
    for _ in range(wanted):
        cut = buffer.rfind(b"\n", 0, cut)
        if cut < 0:
            break
    data = buffer[cut + 1 :] if cut >= 0 else buffer
    data = data[-MAX_READ:]
    return _slice(data, size - len(data), size)
