"""``$CLIPYARD_HOME`` and the secrets ``clipyard up`` keeps there.

- ``$CLIPYARD_HOME`` (default ``~/.clipyard``) is resolved to an absolute path.
- ``nats/passwords.json`` (mode 0600): one generated NATS password per user of
  ``deploy/nats/nats.conf`` (the five services and ``cli``), created on the first start and reused.
- ``admin.key`` (mode 0600): the admin key, created once, unless ``CLIPYARD_ADMIN_KEY`` is set.

Secret files are written by :mod:`servicekit.keys`, the implementation the gateway shares
(atomic, 0600; folders created 0700).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from contracts.subjects import SERVICES
from servicekit import keys

__all__ = [
    "CLI_USER",
    "NATS_USERS",
    "HomeError",
    "admin_key_path",
    "ensure_admin_key",
    "ensure_passwords",
    "generate_secret",
    "load_passwords",
    "logs_dir",
    "nats_dir",
    "password_env_var",
    "passwords_path",
    "resolve_home",
]

CLI_USER: Final = "cli"
NATS_USERS: Final[tuple[str, ...]] = (*SERVICES, CLI_USER)
"""Every user of ``deploy/nats/nats.conf``: the service tokens, then the CLI."""


class HomeError(RuntimeError):
    """Something under ``$CLIPYARD_HOME`` is missing or unusable; the message says what to do."""


def resolve_home(env: Mapping[str, str]) -> Path:
    """The absolute ``$CLIPYARD_HOME`` (default ``~/.clipyard``).

    Args:
        env: The environment to read ``CLIPYARD_HOME`` from.

    Returns:
        The home folder as an absolute, resolved path (it need not exist yet).
    """
    return Path(env.get("CLIPYARD_HOME") or "~/.clipyard").expanduser().resolve()


def nats_dir(home: Path) -> Path:
    """``$CLIPYARD_HOME/nats``: the JetStream store and the NATS passwords."""
    return home / "nats"


def logs_dir(home: Path) -> Path:
    """``$CLIPYARD_HOME/logs``: one log file per process of the local stack."""
    return home / "logs"


def passwords_path(home: Path) -> Path:
    """``$CLIPYARD_HOME/nats/passwords.json``."""
    return nats_dir(home) / "passwords.json"


def admin_key_path(home: Path) -> Path:
    """``$CLIPYARD_HOME/admin.key`` (:func:`servicekit.keys.admin_key_path`)."""
    return keys.admin_key_path(home)


def password_env_var(user: str) -> str:
    """The variable ``nats.conf`` reads a user's password from (``CLIPYARD_NATS_PASSWORD_CLI``)."""
    return f"CLIPYARD_NATS_PASSWORD_{user.upper()}"


def generate_secret(prefix: str = "cy") -> str:
    """A random secret of letters and digits that starts with a letter.

    NATS parses a password read from the environment as a config value, so a secret must not
    look like a number or a boolean; a letter prefix and hex digits never do.

    Args:
        prefix: Leading letters.

    Returns:
        ``prefix`` followed by 48 hex digits (192 random bits).
    """
    return prefix + secrets.token_hex(24)


def ensure_passwords(home: Path) -> dict[str, str]:
    """The NATS password of every user, generated into ``passwords.json`` on first use.

    An existing file is kept; a user missing from it gets a new password (the file is rewritten,
    still 0600).

    Args:
        home: The resolved ``$CLIPYARD_HOME``.

    Returns:
        User name -> password, for every name in :data:`NATS_USERS`.
    """
    path = passwords_path(home)
    keys.private_dir(home)
    keys.private_dir(path.parent)
    current = _read_passwords(path) if path.exists() else {}
    missing = [user for user in NATS_USERS if not current.get(user)]
    if missing:
        current.update({user: generate_secret() for user in missing})
        keys.write_private(path, json.dumps(current, indent=2, sort_keys=True) + "\n")
    return {user: current[user] for user in NATS_USERS}


def load_passwords(home: Path) -> dict[str, str]:
    """The passwords ``clipyard up`` generated, without creating any.

    Raises:
        HomeError: There is no password file yet.
    """
    path = passwords_path(home)
    if not path.exists():
        raise HomeError(
            f"{path} does not exist: start the stack with `clipyard up` (or `./dev up`) first, "
            "or set CLIPYARD_NATS_USER and CLIPYARD_NATS_PASSWORD"
        )
    return _read_passwords(path)


def ensure_admin_key(home: Path, env: Mapping[str, str]) -> str:
    """The admin key: ``CLIPYARD_ADMIN_KEY`` if set, else ``admin.key``, created once (0600).

    The file is the gateway's too (:func:`servicekit.keys.ensure_admin_key_file`): whichever
    starts first creates it, the other reads the same key.

    Args:
        home: The resolved ``$CLIPYARD_HOME``.
        env: The environment to read ``CLIPYARD_ADMIN_KEY`` from.

    Returns:
        The key.
    """
    given = env.get("CLIPYARD_ADMIN_KEY")
    if given:
        return given
    return keys.ensure_admin_key_file(home)


def _read_passwords(path: Path) -> dict[str, str]:
    keys.tighten(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HomeError(
            f"{path} is not readable JSON ({exc}); delete it to generate new passwords"
        ) from exc
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise HomeError(f"{path} must map user names to passwords; delete it to start afresh")
    return {str(k): v for k, v in data.items()}
