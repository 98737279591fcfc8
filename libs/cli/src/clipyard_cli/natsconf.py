"""The configuration ``clipyard up`` starts nats-server with: the repository's, plus a log file
that NATS rotates itself.

``$CLIPYARD_HOME/nats/server.conf`` (rewritten at every start) includes the chosen configuration
(``deploy/nats/nats.conf`` or ``CLIPYARD_NATS_CONFIG``) and adds ``log_file``
(``$CLIPYARD_HOME/logs/nats-server.log``), ``logfile_size_limit`` (``CLIPYARD_LOG_MAX_BYTES``)
and ``logfile_max_num`` (``CLIPYARD_LOG_BACKUPS`` + 1: NATS counts the live file too). NATS
renames a full log to ``nats-server.log.<timestamp>`` and deletes the oldest beyond that count.
``deploy/nats/nats.conf`` itself is left as docker compose uses it (logging to stdout). NATS
resolves an ``include`` relative to the including file (an absolute one is not accepted), so the
include names the configuration by a relative path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Final

from clipyard_cli.home import logs_dir, nats_dir
from servicekit.settings import Rotation

__all__ = ["NATS_LOG_NAME", "nats_log_path", "server_config_path", "write_server_config"]

NATS_LOG_NAME: Final = "nats-server"
"""The name of nats-server's log (``logs/nats-server.log``) and of its process."""


def nats_log_path(home: Path) -> Path:
    """``$CLIPYARD_HOME/logs/nats-server.log``."""
    return logs_dir(home) / f"{NATS_LOG_NAME}.log"


def server_config_path(home: Path) -> Path:
    """``$CLIPYARD_HOME/nats/server.conf``: what ``clipyard up`` hands nats-server."""
    return nats_dir(home) / "server.conf"


def write_server_config(config: Path, home: Path, rotation: Rotation) -> Path:
    """Write :func:`server_config_path` for ``config`` and ``rotation``.

    Args:
        config: The NATS configuration to include (absolute).
        home: ``CLIPYARD_HOME``.
        rotation: When nats-server's log rotates and how many old ones it keeps.

    Returns:
        The written file (0600, in the 0700 ``nats`` folder).
    """
    path = server_config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    include = os.path.relpath(config.resolve(), path.parent.resolve())
    text = "\n".join(
        [
            "# Written by `clipyard up` at every start: do not edit (see clipyard_cli/natsconf.py).",
            f"include {_quoted(include)}",
            f"log_file: {_quoted(str(nats_log_path(home)))}",
            f"logfile_size_limit: {rotation.max_bytes}",
            f"logfile_max_num: {rotation.backups + 1}",
            "",
        ]
    )
    scratch = path.with_name(f".{path.name}.tmp")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(scratch, path)
    return path


def _quoted(value: str) -> str:
    """A NATS configuration string (double-quoted, as JSON quotes it)."""
    return json.dumps(value, ensure_ascii=False)
