"""Where a service's event store lives, and the ``eventsourcing`` settings built from that.

The library is configured with an explicit ``env`` mapping (never ``os.environ``):

- ``sqlite`` (the embedded default): one file per service, ``<home>/data/<service>.sqlite``;
- ``postgres``: one schema per service, ``clipyard_<service>``, created at start; the library's
  ``POSTGRES_*`` settings are built from the DSN (with a dummy password when the DSN has none,
  because the library insists on one even under trust authentication);
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
    "StoreKind",
    "StoreSettings",
    "ensure_postgres_schema",
    "eventsourcing_env",
    "postgres_schema",
    "sqlite_path",
]

StoreKind = Literal["sqlite", "postgres", "memory"]

DUMMY_POSTGRES_PASSWORD = "unused-with-trust-auth"
"""Handed to the library when the DSN carries no password (it refuses to start without one)."""

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


def eventsourcing_env(settings: StoreSettings, service: str) -> dict[str, str]:
    """Build the ``eventsourcing`` settings of one service's application.

    For SQLite the ``<home>/data`` directory is created. Nothing else is touched (the PostgreSQL
    schema is created by :func:`ensure_postgres_schema`).

    Args:
        settings: The store settings.
        service: The service token or name; it names the SQLite file or PostgreSQL schema.

    Returns:
        The mapping to pass as the application's ``env``.

    Raises:
        ValueError: Unknown store kind, invalid service name, or postgres without a DSN.
    """
    if settings.kind == "memory":
        _check_service(service)
        return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    if settings.kind == "sqlite":
        path = sqlite_path(settings, service)
        path.parent.mkdir(parents=True, exist_ok=True)
        return {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(path),
            "SQLITE_LOCK_TIMEOUT": "10",
        }
    if settings.kind == "postgres":
        params = conninfo_to_dict(_require_dsn(settings))
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
        ValueError: No DSN.
        psycopg.Error: The database refused.
    """
    schema = postgres_schema(service)
    statement = sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))
    # A concurrent start may create it in the meantime: that is fine too.
    concurrent = (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateSchema)
    with (
        psycopg.connect(_require_dsn(settings), autocommit=True, connect_timeout=10) as conn,
        contextlib.suppress(*concurrent),
    ):
        conn.execute(statement)
    return schema
