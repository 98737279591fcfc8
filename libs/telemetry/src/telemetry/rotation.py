"""Size-based rotation of append-only files: the policy, its settings and the kept files' names.

A file ``<name>`` rotates when it is full: ``<name>.<backups - 1>`` becomes ``<name>.<backups>``
(the one that was there is deleted), ..., ``<name>.1`` becomes ``<name>.2``, ``<name>`` becomes
``<name>.1``, and a new, empty ``<name>`` is started. So at most ``backups`` old files are kept,
``<name>.1`` the newest; with ``backups = 0`` the old content is dropped. Backups numbered beyond
``backups`` (left by a larger setting) are deleted at the next rotation.

Settings come in pairs, ``<PREFIX>_MAX_BYTES`` and ``<PREFIX>_BACKUPS`` (``CLIPYARD_LOG_*``,
``CLIPYARD_SPANS_*``): :func:`rotation_from_env` reads and checks one pair.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "DEFAULT_LOG_ROTATION",
    "DEFAULT_SPANS_ROTATION",
    "MIB",
    "Rotation",
    "backup_path",
    "backup_paths",
    "kept_files",
    "rotation_from_env",
]

MIB: Final = 1024 * 1024


@dataclass(frozen=True)
class Rotation:
    """When a file rotates and how many old files are kept.

    Raises:
        ValueError: ``max_bytes`` is below 1 or ``backups`` below 0.
    """

    max_bytes: int
    """A file rotates before a write would take it past this size (in bytes)."""
    backups: int
    """How many rotated files are kept (``<name>.1`` .. ``<name>.<backups>``)."""

    def __post_init__(self) -> None:
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, not {self.max_bytes}")
        if self.backups < 0:
            raise ValueError(f"backups must be 0 or more, not {self.backups}")


DEFAULT_LOG_ROTATION: Final = Rotation(max_bytes=10 * MIB, backups=5)
"""A service's log and nats-server's: 10 MiB, 5 backups (``CLIPYARD_LOG_*``)."""
DEFAULT_SPANS_ROTATION: Final = Rotation(max_bytes=20 * MIB, backups=5)
"""``telemetry/spans.jsonl``: 20 MiB, 5 backups (``CLIPYARD_SPANS_*``)."""


def rotation_from_env(env: Mapping[str, str], prefix: str, default: Rotation) -> Rotation:
    """Read ``<prefix>_MAX_BYTES`` (a whole number of bytes, 1 or more) and ``<prefix>_BACKUPS``
    (a whole number, 0 or more); an unset or empty variable takes ``default``'s value.

    Args:
        env: The environment.
        prefix: ``CLIPYARD_LOG`` or ``CLIPYARD_SPANS``.
        default: The values of unset variables.

    Returns:
        The rotation.

    Raises:
        ValueError: A value is not a whole number in range; the message names the variable.
    """
    return Rotation(
        max_bytes=_whole(env, f"{prefix}_MAX_BYTES", default.max_bytes, least=1),
        backups=_whole(env, f"{prefix}_BACKUPS", default.backups, least=0),
    )


def _whole(env: Mapping[str, str], name: str, default: int, *, least: int) -> int:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or int(text) < least:
        kind = "a positive whole number" if least == 1 else "a whole number (0 or more)"
        raise ValueError(f"{name}={raw!r} is not {kind}; unset it for {default}")
    return int(text)


def backup_path(path: Path, index: int) -> Path:
    """The ``index``-th backup of ``path``: ``<name>.<index>``, 1 the newest."""
    return path.with_name(f"{path.name}.{index}")


def backup_paths(path: Path) -> dict[int, Path]:
    """The backups of ``path`` that exist, by number (whatever the current setting keeps)."""
    pattern = re.compile(re.escape(path.name) + r"\.([1-9][0-9]*)")
    found: dict[int, Path] = {}
    try:
        entries = list(path.parent.iterdir())
    except FileNotFoundError:
        return found
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match:
            found[int(match[1])] = entry
    return found


def kept_files(path: Path) -> list[Path]:
    """Every file holding what was written to ``path``, oldest first: its backups from the highest
    number down, then ``path`` itself (those that exist).

    A reader that wants the history reads them in this order. A writer may rotate while it reads
    (each file moves one number up), so a line can be seen twice or, rarely, missed: a reader
    that must see everything reads again, as readers of a growing file do anyway.
    """
    backups = backup_paths(path)
    files = [backups[index] for index in sorted(backups, reverse=True)]
    if path.exists():
        files.append(path)
    return files
