"""Private files under ``$CLIPYARD_HOME``: the admin key file, and how secrets are written there.

The one implementation both the gateway (when ``CLIPYARD_ADMIN_KEY`` is unset) and ``clipyard up``
use, so either may create ``admin.key`` first and the other reads the same key:

- folders created for secrets (``$CLIPYARD_HOME`` itself when it does not exist yet) are 0700;
- secret files are written atomically (a temporary file renamed into place) and are 0600 from their
  first byte, whatever the umask; a file found readable by others is made 0600 again;
- the admin key has one format, ``cy_admin_<32 random bytes, URL-safe base64>`` (like the board
  keys' ``cy_board_...``).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Final

__all__ = [
    "ADMIN_KEY_FILE",
    "ADMIN_KEY_PREFIX",
    "PRIVATE_DIR_MODE",
    "SECRET_FILE_MODE",
    "admin_key_path",
    "ensure_admin_key_file",
    "new_admin_key",
    "private_dir",
    "tighten",
    "write_private",
]

ADMIN_KEY_FILE: Final = "admin.key"
"""The admin key file's name under ``$CLIPYARD_HOME`` (ARCHITECTURE §7)."""

ADMIN_KEY_PREFIX: Final = "cy_admin_"
"""Every generated admin key starts with this."""

SECRET_FILE_MODE: Final = 0o600
PRIVATE_DIR_MODE: Final = 0o700


def new_admin_key() -> str:
    """A fresh admin key: ``cy_admin_`` and 32 random bytes in URL-safe base64.

    Returns:
        The clear key.
    """
    return ADMIN_KEY_PREFIX + secrets.token_urlsafe(32)


def admin_key_path(home: Path) -> Path:
    """``$CLIPYARD_HOME/admin.key``.

    Args:
        home: The resolved ``$CLIPYARD_HOME``.

    Returns:
        The key file's path (it need not exist).
    """
    return Path(home) / ADMIN_KEY_FILE


def private_dir(path: Path) -> Path:
    """Make sure the folder ``path`` exists; when this call creates it, it is 0700.

    Missing parents are created as usual; an existing folder is left as it is.

    Args:
        path: The folder.

    Returns:
        ``path``.
    """
    path = Path(path)
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
        path.chmod(PRIVATE_DIR_MODE)  # mkdir's mode is masked by the umask
    return path


def tighten(path: Path) -> None:
    """Make a secret file 0600 when it is readable or writable by anyone but its owner.

    Args:
        path: An existing file.
    """
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        path.chmod(SECRET_FILE_MODE)


def write_private(path: Path, text: str, *, overwrite: bool = True) -> None:
    """Write ``text`` to ``path`` atomically; the file is 0600 from its first byte.

    A temporary file in the same folder is written, flushed to disk and renamed over ``path``
    (or, without ``overwrite``, linked to ``path``), so a reader sees the old content or the new
    one, never a part.

    Args:
        path: The file to (re)write; its folder must exist.
        text: The whole new content.
        overwrite: Replace an existing file; when False an existing file is kept and
            ``FileExistsError`` raised (two processes creating the same file: one wins).

    Raises:
        FileExistsError: ``overwrite`` is False and ``path`` exists.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, SECRET_FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), SECRET_FILE_MODE)  # whatever the umask
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            tmp.replace(path)
        else:
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def ensure_admin_key_file(home: Path) -> str:
    """The admin key kept in ``<home>/admin.key``, created once when missing or empty.

    ``home`` is created 0700 when it does not exist; an existing key file that others may read
    is made 0600 again.

    Args:
        home: The resolved ``$CLIPYARD_HOME``.

    Returns:
        The admin key.
    """
    path = admin_key_path(home)
    private_dir(path.parent)
    exists = path.exists()
    if exists:
        tighten(path)
        if key := path.read_text(encoding="utf-8").strip():
            return key
    key = new_admin_key()
    try:
        write_private(path, key + "\n", overwrite=exists)  # an empty file is replaced
    except FileExistsError:  # another process created it meanwhile: its key is the key
        return path.read_text(encoding="utf-8").strip() or ensure_admin_key_file(home)
    return key
