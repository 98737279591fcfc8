"""A process's own log file: its stdout and stderr appended to a file that rotates by size.

``clipyard up`` starts each service with its stdout and stderr appended to
``$CLIPYARD_HOME/logs/<service>.log`` and names that file in ``CLIPYARD_LOG_FILE``. The service
(:func:`telemetry.logs.configure_logging` with ``log_file``) then takes the file over: it opens it
itself and points descriptors 1 and 2 at it (``dup2``), so everything the process writes goes
there, its JSON log lines, a stray ``print``, a traceback, ``faulthandler``'s dump, whatever
writes to those descriptors. After each log record it checks the size; when the file is full it
rotates it (:class:`telemetry.rotating_file.RotatingFile`: ``<service>.log.1`` the newest backup)
and points descriptors 1 and 2 at the new file. Only the service writes its file; a child process
that inherited the old descriptors keeps writing to the rotated file (a backup), which is harmless.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from telemetry.rotating_file import RotatingFile
from telemetry.rotation import Rotation

__all__ = ["ProcessLogFile"]


class ProcessLogFile:
    """Point this process's stdout and stderr at ``path``, and rotate it when asked.

    Opening it redirects descriptors 1 and 2 at once (what Python buffered is flushed first) and
    rotates the file if it is full already.

    Args:
        path: The log file (appended to; created when missing).
        rotation: When it rotates and how many old files are kept.
    """

    def __init__(self, path: Path, rotation: Rotation) -> None:
        self.path = Path(path)
        self._file = RotatingFile(self.path, rotation, on_open=_point_output_at)
        self._file.rotate_if_full()

    def rotate_if_full(self) -> bool:
        """Rotate the file when it holds ``max_bytes`` or more (a cheap check otherwise).

        Returns:
            True when it rotated.

        Raises:
            OSError: It could not be rotated.
        """
        return self._file.rotate_if_full()

    def close(self) -> None:
        """Stop rotating; descriptors 1 and 2 keep pointing at the current file."""
        self._file.close()


def _point_output_at(fd: int) -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
