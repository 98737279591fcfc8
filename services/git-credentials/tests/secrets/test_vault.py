"""The key vault: one contract, run against the memory, SQLite and PostgreSQL vaults; then what
each real vault does so that a destroyed key is gone from its files."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from eventstore import StoreSettings
from git_credentials.adapters.vault import (
    PG_SCHEMA,
    PG_TABLE,
    KeyVault,
    MemoryVault,
    PostgresVault,
    SqliteVault,
    WrappedKey,
    open_vault,
    vault_path,
)


def _key(secret_id: str, version: int, master: str = "m-old") -> WrappedKey:
    return WrappedKey(secret_id, version, master, os.urandom(60))


class VaultContract:
    """What every vault does; subclasses provide the ``vault`` fixture."""

    def test_put_then_get_and_missing_rows(self, vault: KeyVault) -> None:
        key = _key("s-1", 1)
        vault.put(key)
        assert vault.get("s-1", 1) == key
        assert vault.get("s-1", 2) is None
        assert vault.get("s-2", 1) is None

    def test_put_replaces_the_row_of_the_same_version(self, vault: KeyVault) -> None:
        # A key left by a crash before its save is replaced by the next attempt.
        vault.put(_key("s-1", 2))
        fresh = _key("s-1", 2, "m-new")
        vault.put(fresh)
        assert vault.get("s-1", 2) == fresh

    def test_destroy_forgets_every_version_of_one_secret_only(self, vault: KeyVault) -> None:
        for version in (1, 2, 3):
            vault.put(_key("doomed", version))
        kept = _key("kept", 1)
        vault.put(kept)
        assert vault.secret_ids() == {"doomed", "kept"}
        assert vault.destroy("doomed") == 3
        assert [vault.get("doomed", v) for v in (1, 2, 3)] == [None, None, None]
        assert vault.get("kept", 1) == kept
        assert vault.secret_ids() == {"kept"}
        assert vault.destroy("doomed") == 0

    def test_rewrap_replaces_rows_of_other_master_keys_it_can_open(self, vault: KeyVault) -> None:
        current = _key("s-1", 1, "m-current")
        vault.put(current)
        vault.put(_key("s-2", 1, "m-old"))
        vault.put(_key("s-3", 1, "m-unknown"))
        seen: list[str] = []

        def rewrap(row: WrappedKey) -> WrappedKey | None:
            seen.append(row.secret_id)
            if row.master_key_id == "m-unknown":
                return None  # cannot open it: left as it is
            return WrappedKey(row.secret_id, row.version, "m-current", b"rewrapped" * 6)

        assert vault.rewrap("m-current", rewrap) == 1
        # Only rows of other keys were offered; the current one was not touched.
        assert sorted(seen) == ["s-2", "s-3"]
        assert vault.get("s-1", 1) == current
        assert vault.get("s-2", 1) == WrappedKey("s-2", 1, "m-current", b"rewrapped" * 6)
        assert vault.get("s-3", 1).master_key_id == "m-unknown"  # type: ignore[union-attr]
        assert vault.rewrap("m-current", rewrap) == 0

    def test_wrapped_bytes_stay_out_of_repr(self, vault: KeyVault) -> None:
        key = _key("s-1", 1)
        assert repr(key.wrapped) not in repr(key)


class TestMemoryVault(VaultContract):
    @pytest.fixture
    def vault(self) -> MemoryVault:
        return MemoryVault()


class TestSqliteVault(VaultContract):
    @pytest.fixture
    def vault(self, tmp_path: Path) -> Iterator[SqliteVault]:
        vault = SqliteVault(vault_path(tmp_path))
        yield vault
        vault.close()

    def test_the_file_is_private_and_forgets(self, tmp_path: Path) -> None:
        path = vault_path(tmp_path)
        vault = SqliteVault(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        # Secure delete and a rollback journal (no WAL that would keep old pages).
        assert vault._db.execute("PRAGMA secure_delete").fetchone()[0] == 1
        assert vault._db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        doomed = [_key("doomed", v) for v in (1, 2)]
        kept = _key("kept", 1)
        for key in (*doomed, kept):
            vault.put(key)
        raw = path.read_bytes()
        assert all(key.wrapped in raw for key in (*doomed, kept))  # the test can see them
        vault.destroy("doomed")
        vault.close()
        raw = path.read_bytes()
        assert not any(key.wrapped in raw for key in doomed)
        assert kept.wrapped in raw
        assert not Path(f"{path}-journal").exists()
        assert not Path(f"{path}-wal").exists()

    def test_an_exposed_vault_file_is_made_private_again(self, tmp_path: Path) -> None:
        path = vault_path(tmp_path)
        SqliteVault(path).close()
        path.chmod(0o644)
        SqliteVault(path).close()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600

    def test_rewrap_leaves_no_old_wrapping_in_the_file(self, tmp_path: Path) -> None:
        path = vault_path(tmp_path)
        vault = SqliteVault(path)
        old = _key("s-1", 1, "m-old")
        vault.put(old)
        new = WrappedKey("s-1", 1, "m-new", os.urandom(60))
        vault.rewrap("m-new", lambda row: new)
        vault.close()
        raw = path.read_bytes()
        assert old.wrapped not in raw
        assert new.wrapped in raw


def test_the_vault_follows_the_store(tmp_path: Path) -> None:
    memory = open_vault(StoreSettings(kind="memory", home=tmp_path))
    assert isinstance(memory, MemoryVault)
    sqlite = open_vault(StoreSettings(kind="sqlite", home=tmp_path))
    assert isinstance(sqlite, SqliteVault)
    assert sqlite.path == tmp_path / "credentials" / "vault.db"
    sqlite.close()
    with pytest.raises(ValueError, match="CLIPYARD_POSTGRES_DSN"):
        open_vault(StoreSettings(kind="postgres", home=tmp_path))


def _relation_bytes(dsn: str) -> bytes:
    """The table's main data file as PostgreSQL has it on disk (after a checkpoint)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        row = conn.execute(
            "SELECT pg_read_binary_file(pg_relation_filepath(%s))", (f"{PG_SCHEMA}.{PG_TABLE}",)
        ).fetchone()
    assert row is not None
    return bytes(row[0])


@pytest.mark.integration
class TestPostgresVault(VaultContract):
    @pytest.fixture
    def vault(self, pg_database: str) -> PostgresVault:
        return PostgresVault(pg_database)

    def test_a_destroyed_key_is_gone_from_the_table_files(self, pg_database: str) -> None:
        vault = PostgresVault(pg_database)
        PostgresVault(pg_database)  # a second start finds the table
        doomed = [_key("doomed", v) for v in (1, 2)]
        kept = _key("kept", 1)
        for key in (*doomed, kept):
            vault.put(key)
        raw = _relation_bytes(pg_database)
        assert all(key.wrapped in raw for key in (*doomed, kept))  # the test can see them
        assert vault.destroy("doomed") == 2
        raw = _relation_bytes(pg_database)
        assert not any(key.wrapped in raw for key in doomed)
        assert kept.wrapped in raw

    def test_open_vault_uses_the_services_database(self, pg_database: str, tmp_path: Path) -> None:
        vault = open_vault(StoreSettings(kind="postgres", home=tmp_path, postgres_dsn=pg_database))
        assert isinstance(vault, PostgresVault)
        vault.put(_key("s-1", 1))
        with psycopg.connect(pg_database) as conn:
            count = conn.execute(f"SELECT count(*) FROM {PG_SCHEMA}.{PG_TABLE}").fetchone()
        assert count == (1,)


def test_an_sqlite_vault_row_is_plain_columns(tmp_path: Path) -> None:
    # The file is an ordinary SQLite database an operator can inspect and back up.
    vault = SqliteVault(vault_path(tmp_path))
    key = _key("s-1", 4, "abcdef0123456789")
    vault.put(key)
    vault.close()
    db = sqlite3.connect(vault_path(tmp_path))
    row = db.execute("SELECT secret_id, version, master_key_id, wrapped FROM data_keys").fetchone()
    db.close()
    assert row == ("s-1", 4, "abcdef0123456789", key.wrapped)
