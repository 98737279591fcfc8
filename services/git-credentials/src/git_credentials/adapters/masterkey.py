"""The master key that wraps every data key of the key vault (ARCHITECTURE §6).

Where it comes from, in order:

1. ``CLIPYARD_SECRET_KEY``: 32 bytes in URL-safe base64 (standard base64 is accepted too). An
   invalid value stops the service at start with a message saying how to generate one.
2. Otherwise the key file ``$CLIPYARD_HOME/credentials/master.key``, created on first start with
   mode 0600 (its folder 0700). A key file that the group or others may read stops the service
   with the ``chmod 600`` to run.

``CLIPYARD_SECRET_KEY_PREVIOUS`` (a comma-separated list of older keys) lets a rotation proceed:
at start every vault row wrapped by one of them is rewrapped with the current key
(:meth:`git_credentials.adapters.sealing.SecretSealer.rewrap`).

No message here ever holds a key: errors name the variable or the file only.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import secrets
import stat
from pathlib import Path
from typing import Final

from git_credentials.adapters.crypto import KEY_BYTES, KeyRing, MasterKey
from servicekit import SettingsError
from servicekit.keys import private_dir, write_private

__all__ = [
    "CREDENTIALS_DIR",
    "GENERATE_COMMAND",
    "KEY_FILE",
    "MasterKeyError",
    "credentials_dir",
    "key_file_path",
    "load_key_ring",
    "parse_master_key",
    "parse_previous_keys",
    "read_or_create_key_file",
]

CREDENTIALS_DIR: Final = "credentials"
"""The folder under ``$CLIPYARD_HOME`` holding the key file and the SQLite key vault."""
KEY_FILE: Final = "master.key"
GENERATE_COMMAND: Final = (
    'python -c "import base64,secrets;'
    'print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())"'
)
"""Prints a new master key; every message about a bad key quotes it."""


class MasterKeyError(SettingsError):
    """The master key (or an older one) is missing, malformed or exposed; the service cannot start."""


def credentials_dir(home: Path) -> Path:
    """``$CLIPYARD_HOME/credentials``."""
    return Path(home) / CREDENTIALS_DIR


def key_file_path(home: Path) -> Path:
    """``$CLIPYARD_HOME/credentials/master.key``."""
    return credentials_dir(home) / KEY_FILE


def parse_master_key(raw: str, *, source: str) -> bytes:
    """Decode a master key: 32 bytes in URL-safe (or standard) base64, padding optional.

    Args:
        raw: The text (surrounding whitespace ignored).
        source: Where it came from (a variable or a file), for the error message.

    Returns:
        The 32 key bytes.

    Raises:
        MasterKeyError: Not base64 of exactly 32 bytes (the message never shows the text).
    """
    text = raw.strip().replace("+", "-").replace("/", "_").rstrip("=")
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise MasterKeyError(
            f"{source} is not a master key: it must be {KEY_BYTES} random bytes in URL-safe "
            f"base64 (44 characters). Generate one with: {GENERATE_COMMAND}"
        )
    return key


def parse_previous_keys(raw: str | None) -> tuple[bytes, ...]:
    """Decode ``CLIPYARD_SECRET_KEY_PREVIOUS``: older master keys, comma separated.

    Raises:
        MasterKeyError: Naming the position of an entry that is not a key.
    """
    if raw is None or not raw.strip():
        return ()
    entries = [entry for entry in raw.split(",") if entry.strip()]
    return tuple(
        parse_master_key(entry, source=f"CLIPYARD_SECRET_KEY_PREVIOUS (entry {index})")
        for index, entry in enumerate(entries, start=1)
    )


def read_or_create_key_file(home: Path) -> bytes:
    """The master key kept in ``$CLIPYARD_HOME/credentials/master.key``, created when missing.

    The folder is created 0700 and the file 0600 from its first byte. An existing file that
    the group or others may access is refused, not silently fixed: whoever could read it may
    have copied it.

    Raises:
        MasterKeyError: The file is readable by others, or does not hold a key.
    """
    path = key_file_path(home)
    private_dir(path.parent)
    if not path.exists():
        text = base64.urlsafe_b64encode(secrets.token_bytes(KEY_BYTES)).decode("ascii")
        # Another process may create it meanwhile: then its key is the key.
        with contextlib.suppress(FileExistsError):
            write_private(path, text + "\n", overwrite=False)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise MasterKeyError(
            f"The master key file {path} is accessible to its group or others (mode "
            f"{mode:03o}); refusing to start. Restrict it with: chmod 600 {path}"
        )
    return parse_master_key(path.read_text(encoding="utf-8"), source=f"The key file {path}")


def load_key_ring(
    home: Path, secret_key: bytes | None, previous: tuple[bytes, ...] = ()
) -> KeyRing:
    """The master keys the service runs with.

    Args:
        home: ``$CLIPYARD_HOME`` (for the key file when ``secret_key`` is None).
        secret_key: ``CLIPYARD_SECRET_KEY``, decoded, if set.
        previous: ``CLIPYARD_SECRET_KEY_PREVIOUS``, decoded.

    Returns:
        The current key and the older ones (the current one is never among them).

    Raises:
        MasterKeyError: The key file is exposed or malformed.
    """
    current = MasterKey(secret_key if secret_key is not None else read_or_create_key_file(home))
    older: list[MasterKey] = []
    for key in previous:
        candidate = MasterKey(key)
        if candidate.id != current.id and all(candidate.id != o.id for o in older):
            older.append(candidate)
    return KeyRing(current=current, previous=tuple(older))
