"""An append-only file that several processes write and rotate by size, safely.

Every write and every rotation holds an exclusive ``flock`` on a sidecar lock file
``<name>.lock`` next to the file. Under it a writer first follows the path: when the file it holds
is no longer the one at the path (another process rotated it, or someone removed it), it opens the
path again (same device and inode, or not). It then rotates when the data would take the file past
``max_bytes`` (:mod:`telemetry.rotation`: the old files shift one number up, ``<name>`` becomes
``<name>.1``), and appends the data with ``write(2)`` on a descriptor opened ``O_APPEND``.

So, whatever the number of writer processes: no write lands in a file already rotated away,
writes (lines) are never split or interleaved, a file never grows past ``max_bytes`` unless one
write alone is larger (it then gets a file of its own), and the file plus its backups hold every
write since the oldest backup was started. A process killed while holding the lock releases it
(the kernel drops ``flock`` locks with the descriptor).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from telemetry.rotation import Rotation, backup_path, backup_paths

__all__ = ["RotatingFile"]

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


class RotatingFile:
    """Append to ``path``, rotating it by ``rotation``.

    Args:
        path: The file; it and its lock file are created (``mode``) when missing, its folder too.
        rotation: When it rotates and how many old files are kept.
        on_open: Called with the new descriptor each time the file is opened (the first time
            included), before the previous descriptor is closed; the descriptor stays this
            object's (duplicate it to keep it).
        mode: Permissions of files created.
    """

    def __init__(
        self,
        path: Path,
        rotation: Rotation,
        *,
        on_open: Callable[[int], None] | None = None,
        mode: int = 0o640,
    ) -> None:
        self.path = Path(path)
        self.rotation = rotation
        self._on_open = on_open
        self._mode = mode
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock_path = self.path.with_name(f"{self.path.name}.lock")
        self._mutex = threading.Lock()
        self._lock_fd: int | None = os.open(
            self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode
        )
        self._fd: int | None = None
        with self._mutex:
            self._open()

    def write(self, data: bytes) -> None:
        """Append ``data`` in one write, rotating first when it would not fit.

        Args:
            data: Whole lines (the unit that is never split).

        Raises:
            OSError: The file could not be written, rotated or opened again.
            ValueError: The file was closed.
        """
        with self._mutex, self._locked():
            fd = self._follow()
            size = os.fstat(fd).st_size
            if size > 0 and size + len(data) > self.rotation.max_bytes:
                fd = self._rotate()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]

    def rotate_if_full(self) -> bool:
        """Rotate when the file holds ``max_bytes`` or more (for a file written through other
        descriptors, such as a process's own stdout and stderr); follow the path when the file
        was rotated or removed by someone else.

        Cheap when there is nothing to do (two ``stat`` calls, no lock).

        Returns:
            True when this call rotated the file.

        Raises:
            OSError: The file could not be rotated or opened again.
        """
        with self._mutex:
            if self._fd is None:
                return False
            if os.fstat(self._fd).st_size < self.rotation.max_bytes and self._is_current(self._fd):
                return False
            with self._locked():
                fd = self._follow()
                if os.fstat(fd).st_size < self.rotation.max_bytes:
                    return False
                self._rotate()
                return True

    def close(self) -> None:
        """Close the file and the lock file; later writes fail. Closing twice is harmless."""
        with self._mutex:
            for fd in (self._fd, self._lock_fd):
                if fd is not None:
                    os.close(fd)
            self._fd = self._lock_fd = None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if self._lock_fd is None:
            raise ValueError(f"{self.path} was closed")
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _open(self) -> int:
        fd = os.open(self.path, _FLAGS, self._mode)
        try:
            if self._on_open is not None:
                self._on_open(fd)
        except BaseException:
            os.close(fd)
            raise
        old, self._fd = self._fd, fd
        if old is not None:
            os.close(old)
        return fd

    def _is_current(self, fd: int) -> bool:
        try:
            at_path = os.stat(self.path)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (at_path.st_dev, at_path.st_ino) == (held.st_dev, held.st_ino)

    def _follow(self) -> int:
        """The descriptor of the file now at the path (opened again if need be); under the lock."""
        if self._fd is None:
            raise ValueError(f"{self.path} was closed")
        return self._fd if self._is_current(self._fd) else self._open()

    def _rotate(self) -> int:
        """Shift the backups, move the file to ``.1`` and start a new one; under the lock."""
        keep = self.rotation.backups
        backups = backup_paths(self.path)
        for index in sorted(backups, reverse=True):
            if index >= keep:
                backups[index].unlink(missing_ok=True)
            else:
                os.replace(backups[index], backup_path(self.path, index + 1))
        if keep:
            os.replace(self.path, backup_path(self.path, 1))
        else:
            self.path.unlink(missing_ok=True)
        return self._open()
