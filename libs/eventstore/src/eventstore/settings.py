"""Where a service's event store lives, and the ``eventsourcing`` settings built from that.

The library is configured with an explicit ``env`` mapping (never ``os.environ``):

- ``sqlite`` (the embedded default): one file per service, ``<home>/data/<service>.sqlite`` (the
  ``data`` folder, and the home when it does not exist yet, are created 0700);
- ``postgres``: one schema per service, ``clipyard_<service>``, created at start; the library's
  ``POSTGRES_*`` settings are built from the DSN (with a dummy password when the DSN has none,
  because the library insists on one even under trust authentication). The library connects with
  host, port, database, user, password and timeout only, so a DSN with any other parameter
  (``sslmode``, ``sslrootcert``, ``options``, ``target_session_attrs``...) is refused rather than
  silently weakened (:data:`HONOURED_DSN_PARAMETERS`);
- ``memory``: the library's in-memory (POPO) recorders, for unit tests.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

__all__ = [
    "DUMMY_POSTGRES_PASSWORD",
    "HONOURED_DSN_PARAMETERS",
    "StoreKind",
    "StoreSettings",
    "ensure_postgres_schema",
    "eventsourcing_env",
    "postgres_params",
    "postgres_schema",
    "sqlite_path",
]

StoreKind = Literal["sqlite", "postgres", "memory"]

DUMMY_POSTGRES_PASSWORD = "unused-with-trust-auth"
"""Handed to the library when the DSN carries no password (it refuses to start without one)."""

HONOURED_DSN_PARAMETERS = frozenset(
    {"host", "hostaddr", "port", "dbname", "user", "password", "connect_timeout"}
)
"""The DSN parameters eventsourcing 9.5's PostgreSQL recorder connects with (``hostaddr`` only
without ``host``); ``sslmode=prefer``, libpq's default, is accepted too."""

_DEFAULT_SSLMODE = "prefer"
_SERVICE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def _default_home() -> Path:
    return Path.home() / ".clipyard"


@dataclass(frozen=True)
class StoreSettings:
    """Which store a service uses and where it lives."""

    kind: StoreKind = "sqlite"
    """``CLIPYARD_STORE``: ``sqlite`` (embedded default), ``postgres`` or ``memory``."""
    home: Path = field(default_factory=_default_home)
    """``CLIPYARD_HOME``: SQLite files live under ``<home>/data``."""
    postgres_dsn: str | None = field(default=None, repr=False)
    """``CLIPYARD_POSTGRES_DSN``: a libpq DSN or URL (needed when ``kind`` is ``postgres``)."""


def _check_service(service: str) -> str:
    if not _SERVICE.match(service):
        raise ValueError(f"invalid service name {service!r}: use lowercase [a-z0-9_-]")
    return service


def sqlite_path(settings: StoreSettings, service: str) -> Path:
    """The SQLite file of ``service``: ``<home>/data/<service>.sqlite``.

    Args:
        settings: The store settings.
        service: The service token or name (``realizer``).

    Returns:
        The absolute path of the database file.
    """
    return Path(settings.home).expanduser().resolve() / "data" / f"{_check_service(service)}.sqlite"


def postgres_schema(service: str) -> str:
    """The PostgreSQL schema of ``service``: ``clipyard_<service>`` with ``-`` turned into ``_``.

    Args:
        service: The service token or name.

    Returns:
        The schema name.
    """
    return "clipyard_" + _check_service(service).replace("-", "_")


def _require_dsn(settings: StoreSettings) -> str:
    if not settings.postgres_dsn:
        raise ValueError(
            "the postgres store needs a DSN (CLIPYARD_POSTGRES_DSN), for example "
            "postgresql://clipyard@127.0.0.1:5432/clipyard"
        )
    return settings.postgres_dsn


def postgres_params(dsn: str) -> dict[str, str]:
    """The parameters of a PostgreSQL DSN, when the event store can honour every one of them.

    Args:
        dsn: A libpq connection string or ``postgresql://`` URL (``CLIPYARD_POSTGRES_DSN``).

    Returns:
        Parameter names to values.

    Raises:
        ValueError: The DSN does not parse, or sets a parameter the store would drop (named in
            the message; values are never shown, they may be secret).
    """
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    except psycopg.ProgrammingError:
        raise ValueError(
            "CLIPYARD_POSTGRES_DSN is not a libpq connection string or postgresql:// URL; "
            "use for example postgresql://clipyard@127.0.0.1:5432/clipyard"
        ) from None
    refused = sorted(
        name
        for name in params
        if name not in HONOURED_DSN_PARAMETERS
        and not (name == "sslmode" and params[name] == _DEFAULT_SSLMODE)
    )
    if "host" in params and "hostaddr" in params:
        refused.append("hostaddr (together with host)")
    if refused:
        raise ValueError(
            f"CLIPYARD_POSTGRES_DSN sets {', '.join(refused)}, which the event store cannot "
            "honour: eventsourcing's PostgreSQL recorder connects with host (or hostaddr), port, "
            "dbname, user, password and connect_timeout only, so TLS settings (sslmode other "
            "than prefer, sslrootcert...), options and target_session_attrs would be dropped "
            "silently. Remove them from the DSN (reach PostgreSQL over a trusted network or a "
            "TLS tunnel instead)."
        )
    return params


def _private_dirs(home: Path, folder: Path) -> None:
    """Create ``folder`` (inside ``home``) and ``home``, each 0700 when created here."""
    for path in (home, folder):
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.chmod(0o700)  # mkdir's mode is masked by the umask


def eventsourcing_env(settings: StoreSettings, service: str) -> dict[str, str]:
    """Build the ``eventsourcing`` settings of one service's application.

    For SQLite the ``<home>/data`` directory is created (0700, as the home when it does not exist
    yet). Nothing else is touched (the PostgreSQL schema is created by
    :func:`ensure_postgres_schema`).

    Args:
        settings: The store settings.
        service: The service token or name; it names the SQLite file or PostgreSQL schema.

    Returns:
        The mapping to pass as the application's ``env``.

    Raises:
        ValueError: Unknown store kind, invalid service name, postgres without a DSN or with a
            DSN parameter the store cannot honour (see :func:`postgres_params`).
    """
    if settings.kind == "memory":
        _check_service(service)
        return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    if settings.kind == "sqlite":
        path = sqlite_path(settings, service)
        _private_dirs(path.parent.parent, path.parent)
        return {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(path),
            "SQLITE_LOCK_TIMEOUT": "10",
        }
    if settings.kind == "postgres":
        params = postgres_params(_require_dsn(settings))
        return {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": str(params.get("dbname") or params.get("user") or "postgres"),
            "POSTGRES_HOST": str(params.get("host") or params.get("hostaddr") or "127.0.0.1"),
            "POSTGRES_PORT": str(params.get("port") or "5432"),
            "POSTGRES_USER": str(params.get("user") or "postgres"),
            "POSTGRES_PASSWORD": str(params.get("password") or DUMMY_POSTGRES_PASSWORD),
            "POSTGRES_SCHEMA": postgres_schema(service),
            "POSTGRES_CONNECT_TIMEOUT": str(params.get("connect_timeout") or "5"),
        }
    raise ValueError(f"unknown store kind {settings.kind!r}; use sqlite, postgres or memory")


def ensure_postgres_schema(settings: StoreSettings, service: str) -> str:
    """Create the service's schema if it does not exist (the library needs it to exist).

    Args:
        settings: The store settings (``kind`` must be ``postgres``).
        service: The service token or name.

    Returns:
        The schema name.

    Raises:
        ValueError: No DSN, or one with a parameter the store cannot honour.
        psycopg.Error: The database refused.
    """
    schema = postgres_schema(service)
    postgres_params(_require_dsn(settings))  # refused before anything connects
    statement = sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))
    # A concurrent start may create it in the meantime: that is fine too.
    concurrent = (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateSchema)
    with (
        psycopg.connect(_require_dsn(settings), autocommit=True, connect_timeout=10) as conn,
        contextlib.suppress(*concurrent),
    ):
        conn.execute(statement)
    return schema
