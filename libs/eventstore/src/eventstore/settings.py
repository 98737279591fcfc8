"""Where a service's event store lives, and the ``eventsourcing`` settings built from that.

The library is configured with an explicit ``env`` mapping (never ``os.environ``):

- ``sqlite`` (the embedded default): one file per service, ``<home>/data/<service>.sqlite`` (the
  ``data`` folder, and the home when it does not exist yet, are created 0700);
- ``postgres``: one schema per service, ``clipyard_<service>``, created at start. The store
  connects with the DSN's whole conninfo (:mod:`eventstore.postgres_factory`), so every libpq
  parameter is honoured: several hosts (``host=a,b port=5432,5433`` or
  ``postgresql://u@a:5432,b:5433/db``), tried in turn, with ``target_session_attrs``, TLS
  (``sslmode``, ``sslrootcert``...), ``options``, ``application_name``... The few parameters an
  event store cannot work with are refused by name (:func:`postgres_params`): a replication
  connection, or a ``target_session_attrs`` that picks a read-only server. The library's
  ``POSTGRES_*`` settings are still filled in from the DSN (with a dummy password when the DSN has
  none, because the library insists on one even under trust authentication);
- ``memory``: the library's in-memory (POPO) recorders, for unit tests.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DUMMY_POSTGRES_PASSWORD",
    "FACTORY_TOPICS",
    "MEMORY_FACTORY_TOPIC",
    "POSTGRES_CONNINFO_SETTING",
    "POSTGRES_FACTORY_TOPIC",
    "SQLITE_FACTORY_TOPIC",
    "WRITABLE_SESSION_ATTRS",
    "StoreKind",
    "StoreSettings",
    "ensure_postgres_schema",
    "eventsourcing_env",
    "postgres_conninfo",
    "postgres_params",
    "postgres_schema",
    "sqlite_path",
]

StoreKind = Literal["sqlite", "postgres", "memory"]

DUMMY_POSTGRES_PASSWORD = "unused-with-trust-auth"
"""Handed to the library when the DSN carries no password (it refuses to start without one)."""

POSTGRES_FACTORY_TOPIC = "eventstore.postgres_factory:ClipyardPostgresFactory"
"""The library's PostgreSQL factory, connecting with the whole conninfo (imported only when used)."""
SQLITE_FACTORY_TOPIC = "eventstore.recorders:ClipyardSQLiteFactory"
"""The library's SQLite factory, its recorder holding leases and checking fences."""
MEMORY_FACTORY_TOPIC = "eventstore.recorders:ClipyardPOPOFactory"
"""The library's in-memory factory, its recorder holding leases and checking fences."""
FACTORY_TOPICS = {
    "eventsourcing.popo": MEMORY_FACTORY_TOPIC,
    "eventsourcing.sqlite": SQLITE_FACTORY_TOPIC,
}
"""The library's own modules, and the Clipyard factory used in their place (same tables)."""

WRITABLE_SESSION_ATTRS = frozenset({"any", "read-write", "primary"})
"""The ``target_session_attrs`` an event store can use: it writes (``LOCK TABLE``, ``INSERT``), so
``read-only``, ``standby`` and ``prefer-standby`` are refused."""

DEFAULT_CONNECT_TIMEOUT = 5
"""Seconds libpq gives each host when the DSN sets no ``connect_timeout`` (a host that never
answers must not hold up the next one for psycopg's default of 130 s)."""

POSTGRES_CONNINFO_SETTING = "CLIPYARD_POSTGRES_CONNINFO"
"""The library setting that hands the whole conninfo to the factory of :data:`POSTGRES_FACTORY_TOPIC`."""

_DSN_VARIABLE = "CLIPYARD_POSTGRES_DSN"
_FALSE = frozenset({"0", "off", "false", "no", "f", "n"})
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
    """The service's ``CLIPYARD_POSTGRES_DSN_<TOKEN>``, else ``CLIPYARD_POSTGRES_DSN``
    (``servicekit.store_dsn``): a libpq DSN or URL (needed when ``kind`` is ``postgres``)."""


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


def postgres_params(dsn: str, *, variable: str = _DSN_VARIABLE) -> dict[str, str]:
    """The parameters of a PostgreSQL DSN, when the event store can work with every one of them.

    Every libpq parameter reaches libpq (see :mod:`eventstore.postgres_factory`); refused are only
    a replication connection and a ``target_session_attrs`` outside
    :data:`WRITABLE_SESSION_ATTRS` (the store writes).

    Args:
        dsn: A libpq connection string or ``postgresql://`` URL (``CLIPYARD_POSTGRES_DSN``).
        variable: The setting the DSN came from, named in the messages.

    Returns:
        Parameter names to values.

    Raises:
        ValueError: The DSN does not parse, or sets a parameter the store cannot work with (named
            in the message with what to use; values are never shown, they may be secret).
    """
    # psycopg is imported here, not at the top: a SQLite or in-memory store never needs it.
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    except psycopg.ProgrammingError:
        raise ValueError(
            f"{variable} is not a libpq connection string or postgresql:// URL; use for "
            "example postgresql://clipyard@127.0.0.1:5432/clipyard (libpq parameters such as "
            "target_session_attrs or sslmode go in the query string)"
        ) from None
    refused: list[str] = []
    if params.get("replication", "off").strip().lower() not in _FALSE:
        refused.append("replication (an event store needs a normal session, not a replication one)")
    if params.get("target_session_attrs", "any") not in WRITABLE_SESSION_ATTRS:
        refused.append(
            "target_session_attrs (the event store writes: use read-write or primary to find "
            "the primary among several hosts, or any)"
        )
    if refused:
        raise ValueError(f"{variable} sets {'; '.join(refused)}")
    return params


def postgres_conninfo(dsn: str, *, service: str = "", variable: str = _DSN_VARIABLE) -> str:
    """The conninfo the store connects with: the DSN's own, with two defaults it may override.

    ``connect_timeout`` (:data:`DEFAULT_CONNECT_TIMEOUT` seconds per host) and
    ``fallback_application_name`` (``clipyard_<service>``, shown in ``pg_stat_activity`` unless
    the DSN sets ``application_name``) are added when the DSN does not set them.

    Args:
        dsn: The DSN (``CLIPYARD_POSTGRES_DSN`` or the service's own).
        service: The service token or name, for the application name (none when empty).
        variable: The setting the DSN came from, named in the messages.

    Returns:
        A libpq ``key=value`` conninfo.

    Raises:
        ValueError: See :func:`postgres_params`.
    """
    params = postgres_params(dsn, variable=variable)
    params.setdefault("connect_timeout", str(DEFAULT_CONNECT_TIMEOUT))
    if service:
        params.setdefault("fallback_application_name", postgres_schema(service))
    from psycopg.conninfo import make_conninfo

    return make_conninfo("", **params)


def _pool_wait(params: dict[str, str]) -> int:
    """Seconds the library's pool waits for a connection: long enough for libpq to try every
    host in turn with its ``connect_timeout``."""
    hosts = max(len(params.get("host", "").split(",")), len(params.get("hostaddr", "").split(",")))
    try:
        per_host = int(params.get("connect_timeout") or DEFAULT_CONNECT_TIMEOUT)
    except ValueError:
        per_host = DEFAULT_CONNECT_TIMEOUT
    return max(per_host, 2) * hosts if per_host > 0 else 30


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
            DSN parameter the store cannot work with (see :func:`postgres_params`).
    """
    if settings.kind == "memory":
        _check_service(service)
        return {"PERSISTENCE_MODULE": MEMORY_FACTORY_TOPIC}
    if settings.kind == "sqlite":
        path = sqlite_path(settings, service)
        _private_dirs(path.parent.parent, path.parent)
        return {
            "PERSISTENCE_MODULE": SQLITE_FACTORY_TOPIC,
            "SQLITE_DBNAME": str(path),
            "SQLITE_LOCK_TIMEOUT": "10",
        }
    if settings.kind == "postgres":
        conninfo = postgres_conninfo(_require_dsn(settings), service=service)
        from psycopg.conninfo import conninfo_to_dict

        params = conninfo_to_dict(conninfo)
        # The library insists on these; only the conninfo decides where and how it connects.
        return {
            "PERSISTENCE_MODULE": POSTGRES_FACTORY_TOPIC,
            POSTGRES_CONNINFO_SETTING: conninfo,
            "POSTGRES_DBNAME": str(params.get("dbname") or params.get("user") or "postgres"),
            "POSTGRES_HOST": str(params.get("host") or params.get("hostaddr") or "127.0.0.1"),
            "POSTGRES_PORT": str(params.get("port") or "5432"),
            "POSTGRES_USER": str(params.get("user") or "postgres"),
            "POSTGRES_PASSWORD": str(params.get("password") or DUMMY_POSTGRES_PASSWORD),
            "POSTGRES_SCHEMA": postgres_schema(service),
            "POSTGRES_CONNECT_TIMEOUT": str(_pool_wait({k: str(v) for k, v in params.items()})),
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
        ValueError: No DSN, or one with a parameter the store cannot work with.
        psycopg.Error: The database refused.
    """
    import psycopg
    from psycopg import sql

    schema = postgres_schema(service)
    # Refused before anything connects; then connected exactly as the store will be.
    conninfo = postgres_conninfo(_require_dsn(settings), service=service)
    statement = sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))
    # A concurrent start may create it in the meantime: that is fine too.
    concurrent = (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateSchema)
    with (
        psycopg.connect(conninfo, autocommit=True) as conn,
        contextlib.suppress(*concurrent),
    ):
        conn.execute(statement)
    return schema
