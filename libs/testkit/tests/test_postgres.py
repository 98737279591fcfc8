"""The postgres fixture is a real PostgreSQL 15; pg_database isolates each test."""

from __future__ import annotations

import psycopg
import pytest

from testkit.postgres import PostgresServer, create_database, drop_database

pytestmark = pytest.mark.integration


def test_postgres_answers_a_query(postgres: PostgresServer) -> None:
    assert postgres.dsn.startswith("postgresql://")
    with psycopg.connect(postgres.dsn) as conn:
        (version,) = conn.execute("SHOW server_version").fetchone() or ("",)
        (answer,) = conn.execute("SELECT 40 + 2").fetchone() or (0,)
    assert version.startswith("15.")
    assert answer == 42


def test_pg_database_is_a_fresh_database(pg_database: str, postgres: PostgresServer) -> None:
    with psycopg.connect(pg_database, autocommit=True) as conn:
        (name,) = conn.execute("SELECT current_database()").fetchone() or ("",)
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
        conn.execute("CREATE SCHEMA clipyard_probe")
        conn.execute("CREATE TABLE clipyard_probe.t (id int)")
    assert name.startswith("t_")
    assert tables == (0,)
    with psycopg.connect(postgres.dsn) as conn:
        schemas = conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'clipyard_probe'"
        ).fetchone()
    assert schemas == (0,), "the admin database must not see the test database's schema"


def test_dropping_a_database_disconnects_its_users(postgres: PostgresServer) -> None:
    name = create_database(postgres.dsn, prefix="drop_")
    lingering = psycopg.connect(postgres.dsn_for(name))
    try:
        drop_database(postgres.dsn, name)
        with psycopg.connect(postgres.dsn) as conn:
            left = conn.execute(
                "SELECT count(*) FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
    finally:
        lingering.close()
    assert left == (0,)
