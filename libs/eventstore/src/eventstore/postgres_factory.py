"""eventsourcing's PostgreSQL infrastructure, connecting with the service's whole DSN.

The library's :class:`~eventsourcing.postgres.PostgresDatastore` hands its connection pool
``dbname``, ``host``, ``port``, ``user`` and ``password`` as keyword arguments and nothing else,
so several hosts with ``target_session_attrs``, TLS settings (``sslmode``, ``sslrootcert``...),
``options`` or ``application_name`` would never reach libpq. :class:`ClipyardPostgresFactory` is
the library's own factory (recorders, tables, ``LOCK TABLE``, NOTIFY: all unchanged but the
channel's name, which names the schema too: :mod:`eventstore.pg_listen`) whose pool connects
with the conninfo :func:`eventstore.settings.eventsourcing_env` built from the DSN instead
(``CLIPYARD_POSTGRES_CONNINFO`` in the library's settings): psycopg and libpq then try each
host in turn, skip one that refuses or does not match ``target_session_attrs``, and apply every
other parameter. The library's ``POSTGRES_*`` settings are still given (it insists on them) but
no longer decide where or how it connects; ``POSTGRES_CONNECT_TIMEOUT`` stays the pool's wait for
a connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eventsourcing.postgres import PostgresFactory
from psycopg.rows import dict_row

from eventstore.pg_recorder import FencedPostgresRecorder
from eventstore.settings import POSTGRES_CONNINFO_SETTING

if TYPE_CHECKING:
    from eventsourcing.utils import Environment, EnvType

__all__ = ["ClipyardPostgresFactory"]


class ClipyardPostgresFactory(PostgresFactory):
    """The library's PostgreSQL factory, its pool connecting with the whole conninfo."""

    process_recorder_class = FencedPostgresRecorder
    """The library's process recorder, notifying a channel of its own schema (the followers'),
    holding the store's leases and checking fenced writes (:mod:`eventstore.recorders`)."""

    def __init__(self, env: Environment | EnvType | None) -> None:
        """Build the library's datastore, then point its (not yet opened) pool at the conninfo.

        Raises:
            OSError: The conninfo setting is missing (the library's error type for settings).
        """
        super().__init__(env)
        conninfo = self.env.get(POSTGRES_CONNINFO_SETTING)
        if not conninfo:
            msg = (
                f"{POSTGRES_CONNINFO_SETTING} is not set: build the store's settings with "
                "eventstore.eventsourcing_env, which puts the DSN's conninfo there"
            )
            raise OSError(msg)
        pool = self.datastore.pool
        # The pool opens lazily (open=False): no connection was made with the old arguments.
        # Only the row factory stays a keyword: host, port, user, password and the rest come
        # from the conninfo, so libpq's own fallbacks (PGPASSWORD, ~/.pgpass) work too.
        pool.conninfo = conninfo
        pool.kwargs = {"row_factory": dict_row}
