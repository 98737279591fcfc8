"""The key vault: wrapped data keys, kept outside the event store, in a place that can forget.

One row per secret version: ``(secret id, version, master key id, wrapped key)``. The event store
holds only ciphertext; destroying a secret's rows makes every version of it unrecoverable
(crypto-shredding). Three implementations, chosen with the store (:func:`open_vault`):

- :class:`SqliteVault`: ``$CLIPYARD_HOME/credentials/vault.db`` (mode 0600) with
  ``PRAGMA secure_delete=ON`` and a rollback journal (never WAL), so a destroyed key's bytes are
  overwritten in the file rather than left in a free page or a write-ahead log;
- :class:`PostgresVault`: the table ``git_credentials_vault.data_keys`` in the service's database;
  after a destroy or a rewrap the table is rewritten (``VACUUM FULL``), so dead rows do not stay
  in its files;
- :class:`MemoryVault`: a dict, for ``CLIPYARD_STORE=memory``.

The vault runs on the store's thread, like the use cases that call it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from git_credentials.adapters.masterkey import credentials_dir
from servicekit.keys import SECRET_FILE_MODE, private_dir, tighten

if TYPE_CHECKING:
    import psycopg

    from eventstore import StoreSettings

__all__ = [
    "PG_SCHEMA",
    "PG_TABLE",
    "VAULT_FILE",
    "KeyVault",
    "MemoryVault",
    "PostgresVault",
    "Rewrap",
    "SqliteVault",
    "WrappedKey",
    "open_vault",
    "vault_path",
]

VAULT_FILE: Final = "vault.db"
PG_SCHEMA: Final = "git_credentials_vault"
PG_TABLE: Final = "data_keys"


@dataclass(frozen=True)
class WrappedKey:
    """One version's data key, wrapped by the master key ``master_key_id``."""

    secret_id: str
    version: int
    master_key_id: str
    wrapped: bytes = field(repr=False)


Rewrap = Callable[[WrappedKey], "WrappedKey | None"]
"""Given a row wrapped by another master key, the row wrapped by the current one (None: leave it)."""


class KeyVault(Protocol):
    """Where wrapped data keys live."""

    def put(self, key: WrappedKey) -> None:
        """Store (or replace) the key of ``(key.secret_id, key.version)``."""

    def get(self, secret_id: str, version: int) -> WrappedKey | None:
        """The key of one version, or None when there is none (never stored, or destroyed)."""

    def destroy(self, secret_id: str) -> int:
        """Destroy the keys of every version of a secret; return how many rows went."""

    def rewrap(self, current_key_id: str, rewrap: Rewrap) -> int:
        """Replace every row not wrapped by ``current_key_id`` by ``rewrap(row)`` (unless None),
        in one transaction; return how many rows were replaced."""

    def secret_ids(self) -> set[str]:
        """The secrets that have at least one key in the vault."""

    def close(self) -> None:
        """Release the vault's connection (if any)."""


def vault_path(home: Path) -> Path:
    """``$CLIPYARD_HOME/credentials/vault.db``."""
    return credentials_dir(home) / VAULT_FILE


def open_vault(store: StoreSettings) -> KeyVault:
    """The vault that goes with the store: SQLite file, PostgreSQL table, or memory."""
    if store.kind == "postgres":
        if not store.postgres_dsn:
            raise ValueError("the postgres key vault needs CLIPYARD_POSTGRES_DSN")
        return PostgresVault(store.postgres_dsn)
    if store.kind == "sqlite":
        return SqliteVault(vault_path(Path(store.home).expanduser().resolve()))
    return MemoryVault()


class MemoryVault:
    """Keys in a dict (``CLIPYARD_STORE=memory``; unit tests)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, int], WrappedKey] = {}

    def put(self, key: WrappedKey) -> None:
        self.rows[(key.secret_id, key.version)] = key

    def get(self, secret_id: str, version: int) -> WrappedKey | None:
        return self.rows.get((secret_id, version))

    def destroy(self, secret_id: str) -> int:
        doomed = [k for k in self.rows if k[0] == secret_id]
        for k in doomed:
            del self.rows[k]
        return len(doomed)

    def rewrap(self, current_key_id: str, rewrap: Rewrap) -> int:
        fresh = {
            k: rewrap(row) for k, row in self.rows.items() if row.master_key_id != current_key_id
        }
        done = {k: row for k, row in fresh.items() if row is not None}
        self.rows.update(done)
        return len(done)

    def secret_ids(self) -> set[str]:
        return {secret_id for secret_id, _ in self.rows}

    def close(self) -> None:
        return None


class SqliteVault:
    """Keys in an SQLite file that forgets: secure delete, rollback journal, mode 0600."""

    def __init__(self, path: Path) -> None:
        """Open (creating 0600, in a 0700 folder) the vault file and its table."""
        self.path = path
        private_dir(path.parent)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SECRET_FILE_MODE))
        tighten(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.execute("PRAGMA journal_mode=DELETE")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS data_keys (secret_id TEXT NOT NULL, "
            "version INTEGER NOT NULL, master_key_id TEXT NOT NULL, wrapped BLOB NOT NULL, "
            "PRIMARY KEY (secret_id, version))"
        )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def put(self, key: WrappedKey) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO data_keys VALUES (?, ?, ?, ?)",
                (key.secret_id, key.version, key.master_key_id, key.wrapped),
            )

    def get(self, secret_id: str, version: int) -> WrappedKey | None:
        with self._lock:
            row = self._db.execute(
                "SELECT master_key_id, wrapped FROM data_keys WHERE secret_id = ? AND version = ?",
                (secret_id, version),
            ).fetchone()
        return None if row is None else WrappedKey(secret_id, version, row[0], bytes(row[1]))

    def destroy(self, secret_id: str) -> int:
        with self._transaction() as db:
            return db.execute("DELETE FROM data_keys WHERE secret_id = ?", (secret_id,)).rowcount

    def rewrap(self, current_key_id: str, rewrap: Rewrap) -> int:
        with self._transaction() as db:
            rows = db.execute(
                "SELECT secret_id, version, master_key_id, wrapped FROM data_keys "
                "WHERE master_key_id != ?",
                (current_key_id,),
            ).fetchall()
            done = [
                fresh
                for row in rows
                if (fresh := rewrap(WrappedKey(row[0], row[1], row[2], bytes(row[3]))))
            ]
            db.executemany(
                "UPDATE data_keys SET master_key_id = ?, wrapped = ? "
                "WHERE secret_id = ? AND version = ?",
                [(k.master_key_id, k.wrapped, k.secret_id, k.version) for k in done],
            )
        return len(done)

    def secret_ids(self) -> set[str]:
        with self._lock:
            return {r[0] for r in self._db.execute("SELECT DISTINCT secret_id FROM data_keys")}

    def close(self) -> None:
        with self._lock:
            self._db.close()


class PostgresVault:
    """Keys in ``git_credentials_vault.data_keys`` of the service's PostgreSQL database."""

    _TABLE: Final = f"{PG_SCHEMA}.{PG_TABLE}"

    def __init__(self, dsn: str) -> None:
        """Create the schema and the table when they do not exist yet."""
        import psycopg  # only a PostgreSQL vault imports it

        self._dsn = dsn
        concurrent = (
            psycopg.errors.UniqueViolation,
            psycopg.errors.DuplicateSchema,
            psycopg.errors.DuplicateTable,
        )
        with self._connect(autocommit=True) as conn:
            for statement in (
                f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}",
                f"CREATE TABLE IF NOT EXISTS {self._TABLE} (secret_id text NOT NULL, "
                "version integer NOT NULL, master_key_id text NOT NULL, wrapped bytea NOT NULL, "
                "PRIMARY KEY (secret_id, version))",
            ):
                with contextlib.suppress(*concurrent):
                    conn.execute(statement)

    def _connect(self, *, autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
        import psycopg

        return psycopg.connect(self._dsn, autocommit=autocommit, connect_timeout=10)

    def _vacuum(self) -> None:
        """Rewrite the table so no dead row (a destroyed or replaced key) stays in its files."""
        with self._connect(autocommit=True) as conn:
            conn.execute(f"VACUUM FULL {self._TABLE}")

    def put(self, key: WrappedKey) -> None:
        with self._connect() as conn:
            conn.execute(
                f"INSERT INTO {self._TABLE} VALUES (%s, %s, %s, %s) ON CONFLICT (secret_id, "
                "version) DO UPDATE SET master_key_id = EXCLUDED.master_key_id, "
                "wrapped = EXCLUDED.wrapped",
                (key.secret_id, key.version, key.master_key_id, key.wrapped),
            )

    def get(self, secret_id: str, version: int) -> WrappedKey | None:
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT master_key_id, wrapped FROM {self._TABLE} "
                "WHERE secret_id = %s AND version = %s",
                (secret_id, version),
            ).fetchone()
        if row is None:
            return None
        return WrappedKey(secret_id, version, str(row[0]), bytes(row[1]))  # type: ignore[call-overload]

    def destroy(self, secret_id: str) -> int:
        with self._connect() as conn:
            count = conn.execute(
                f"DELETE FROM {self._TABLE} WHERE secret_id = %s", (secret_id,)
            ).rowcount
        if count:
            self._vacuum()
        return count

    def rewrap(self, current_key_id: str, rewrap: Rewrap) -> int:
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT secret_id, version, master_key_id, wrapped FROM {self._TABLE} "
                "WHERE master_key_id <> %s FOR UPDATE",
                (current_key_id,),
            ).fetchall()
            done = [
                fresh
                for r in rows
                if (fresh := rewrap(WrappedKey(str(r[0]), int(r[1]), str(r[2]), bytes(r[3]))))  # type: ignore[call-overload]
            ]
            with conn.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE {self._TABLE} SET master_key_id = %s, wrapped = %s "
                    "WHERE secret_id = %s AND version = %s",
                    [(k.master_key_id, k.wrapped, k.secret_id, k.version) for k in done],
                )
        if done:
            self._vacuum()
        return len(done)

    def secret_ids(self) -> set[str]:
        with self._connect() as conn:
            rows = conn.execute(f"SELECT DISTINCT secret_id FROM {self._TABLE}").fetchall()
        return {str(r[0]) for r in rows}

    def close(self) -> None:
        return None
