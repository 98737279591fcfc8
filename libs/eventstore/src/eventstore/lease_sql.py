"""The ``clipyard_leases`` table in SQL: PostgreSQL and SQLite (see :mod:`eventstore.leases`).

One set of statements for both, written with ``{t}`` (the table), ``{now}`` (the clock in
milliseconds: the server's ``clock_timestamp()`` on PostgreSQL, a parameter on SQLite, whose
database is this host's) and ``%(name)s`` parameters (``:name`` for SQLite). Each call is one
transaction of the store's own datastore; :meth:`SqlLeases.check` runs inside a write's
transaction instead, locking the row on PostgreSQL (``FOR SHARE``) so that a takeover waits for
the write it let through.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Literal

from eventstore.fence import Fence
from eventstore.leases import LEASE_TABLE, LeaseRecord, check_row

__all__ = ["CREATE_STATEMENT", "SqlLeases"]

Dialect = Literal["postgres", "sqlite"]

CREATE_STATEMENT = (
    "CREATE TABLE IF NOT EXISTS {t} (name TEXT PRIMARY KEY, holder TEXT NOT NULL, "
    "token BIGINT NOT NULL, expires_ms BIGINT NOT NULL, acquired_ms BIGINT NOT NULL)"
)
"""The leases' table (``{t}``: its name, schema-qualified on PostgreSQL)."""
_ACQUIRE = (
    "INSERT INTO {t} AS l (name, holder, token, expires_ms, acquired_ms) "
    "VALUES (%(name)s, %(holder)s, 1, {now} + %(ttl)s, {now}) "
    "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = l.token + 1, "
    "expires_ms = excluded.expires_ms, acquired_ms = excluded.acquired_ms "
    "WHERE l.expires_ms <= {now} RETURNING token"
)
_RENEW = (
    "UPDATE {t} SET expires_ms = {now} + %(ttl)s WHERE name = %(name)s AND holder = %(holder)s "
    "AND token = %(token)s AND expires_ms > {now} RETURNING token"
)
_TAKE_OVER = (
    "UPDATE {t} SET holder = %(holder)s, token = token + 1, expires_ms = {now} + %(ttl)s, "
    "acquired_ms = {now} WHERE name = %(name)s AND token = %(from_token)s RETURNING token"
)
_RELEASE = (
    "UPDATE {t} SET expires_ms = 0 WHERE name = %(name)s AND holder = %(holder)s "
    "AND token = %(token)s RETURNING token"
)
_LIST = (
    "SELECT name, holder, token, expires_ms - {now} AS left_ms, {now} - acquired_ms AS held_ms "
    "FROM {t} ORDER BY name"
)
_CHECK = "SELECT holder, token, expires_ms - {now} AS left_ms FROM {t} WHERE name = %(name)s{lock}"
_PG_NOW = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
_PARAM = re.compile(r"%\((\w+)\)s")

Transaction = Callable[..., AbstractContextManager[Any]]


class SqlLeases:
    """The lease calls over one store's datastore (``transaction(commit=...)`` gives a cursor)."""

    def __init__(self, dialect: Dialect, transaction: Transaction, schema: str = "") -> None:
        """
        Args:
            dialect: ``postgres`` or ``sqlite``.
            transaction: The datastore's ``transaction`` (a context manager giving a cursor).
            schema: The PostgreSQL schema holding the table (unused for SQLite).
        """
        self._dialect = dialect
        self._transaction = transaction
        self._schema = schema

    def _query(self, template: str, **parts: str) -> Any:
        if self._dialect == "sqlite":
            text = template.format(t=LEASE_TABLE, now=":now", **parts)
            return _PARAM.sub(r":\1", text)
        from psycopg import sql  # only PostgreSQL's statements need it (SQLite never imports it)

        return sql.SQL(template).format(  # type: ignore[arg-type]
            t=sql.Identifier(self._schema, LEASE_TABLE),
            now=sql.SQL(_PG_NOW),  # type: ignore[arg-type]
            **{key: sql.SQL(value) for key, value in parts.items()},  # type: ignore[arg-type]
        )

    def _params(self, **params: object) -> dict[str, object]:
        if self._dialect == "sqlite":
            params["now"] = int(time.time() * 1000)
        return params

    def _one(self, template: str, **params: object) -> Any:
        with self._transaction(commit=True) as curs:
            curs.execute(self._query(template), self._params(**params))
            return curs.fetchone()

    def create(self) -> None:
        """Create the table if it is missing (idempotent)."""
        with self._transaction(commit=True) as curs:
            curs.execute(self._query(CREATE_STATEMENT))

    def acquire_lease(self, name: str, holder: str, ttl_ms: int) -> int | None:
        """See :meth:`eventstore.leases.LeaseTable.acquire_lease`."""
        row = self._one(_ACQUIRE, name=name, holder=holder, ttl=ttl_ms)
        return None if row is None else int(row["token"])

    def renew_lease(self, name: str, holder: str, token: int, ttl_ms: int) -> bool:
        """See :meth:`eventstore.leases.LeaseTable.renew_lease`."""
        return self._one(_RENEW, name=name, holder=holder, token=token, ttl=ttl_ms) is not None

    def take_over_lease(self, name: str, holder: str, ttl_ms: int, from_token: int) -> int | None:
        """See :meth:`eventstore.leases.LeaseTable.take_over_lease`."""
        row = self._one(_TAKE_OVER, name=name, holder=holder, ttl=ttl_ms, from_token=from_token)
        return None if row is None else int(row["token"])

    def release_lease(self, name: str, holder: str, token: int) -> bool:
        """See :meth:`eventstore.leases.LeaseTable.release_lease`."""
        return self._one(_RELEASE, name=name, holder=holder, token=token) is not None

    def leases(self) -> list[LeaseRecord]:
        """See :meth:`eventstore.leases.LeaseTable.leases`."""
        with self._transaction(commit=False) as curs:
            curs.execute(self._query(_LIST), self._params())
            rows: Iterator[Any] = iter(curs.fetchall())
            return [
                LeaseRecord(
                    name=row["name"],
                    holder=row["holder"],
                    token=int(row["token"]),
                    expires_in_ms=int(row["left_ms"]),
                    held_for_ms=int(row["held_ms"]),
                )
                for row in rows
            ]

    def check(self, curs: Any, fence: Fence) -> None:
        """Inside a write's transaction: raise unless ``fence`` still holds (see fence.py)."""
        lock = " FOR SHARE" if self._dialect == "postgres" else ""
        curs.execute(self._query(_CHECK, lock=lock), self._params(name=fence.lease))
        row = curs.fetchone()
        found = None if row is None else (row["holder"], int(row["token"]), int(row["left_ms"]))
        check_row(fence, found)
