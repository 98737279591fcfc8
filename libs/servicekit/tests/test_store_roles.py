"""Per-service PostgreSQL roles on a real server: the roles and schemas of ``deploy/postgres``,
each service given its own DSN (``CLIPYARD_POSTGRES_DSN_<TOKEN>``), writes its store as its own
role and cannot read another service's."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from eventsourcing.domain import Aggregate, event

from contracts.subjects import SERVICES
from eventstore import ServiceApplication, build_application
from eventstore.settings import postgres_schema
from servicekit import ServiceSettings

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
SCHEMA_SCRIPT = REPO / "deploy" / "postgres" / "10-clipyard-schemas.sh"
TOKENS = {"api-gateway": "gateway", "workspace-realizer": "realizer"}


class Note(Aggregate):
    @event("Written")
    def __init__(self, text: str) -> None:
        self.text = text


def _run_schema_script(admin_dsn: str) -> None:
    """``deploy/postgres/10-clipyard-schemas.sh`` on the test database, as compose runs it."""
    url = urlsplit(admin_dsn)
    env = {
        "PATH": os.environ["PATH"],
        "PGHOST": url.hostname or "127.0.0.1",
        "PGPORT": str(url.port or 5432),
        "PGPASSWORD": url.password or "",
        "POSTGRES_USER": url.username or "postgres",
        "POSTGRES_DB": url.path.lstrip("/"),
        **{f"CLIPYARD_PG_PASSWORD_{t.upper()}": f"pw-{t}" for t in SERVICES},
    }
    run = subprocess.run(
        [str(SCHEMA_SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr


def _as_role(admin_dsn: str, token: str) -> str:
    """The DSN of the service's own role (``clipyard_<token>``), as compose writes it."""
    url = urlsplit(admin_dsn)
    role = postgres_schema(token)
    return f"postgresql://{role}:pw-{token}@{url.hostname}:{url.port}{url.path}"


@pytest.fixture
def stores(pg_database: str, tmp_path: Path) -> Iterator[dict[str, ServiceApplication]]:
    """The gateway's and the realizer's stores, each opened from its service's settings."""
    _run_schema_script(pg_database)
    env = {
        "CLIPYARD_HOME": str(tmp_path),
        "CLIPYARD_STORE": "postgres",
        # The superuser for everyone else: a service given its own must not fall back to it.
        "CLIPYARD_POSTGRES_DSN": pg_database,
        "CLIPYARD_POSTGRES_DSN_GATEWAY": _as_role(pg_database, "gateway"),
        "CLIPYARD_POSTGRES_DSN_REALIZER": _as_role(pg_database, "realizer"),
    }
    opened: dict[str, ServiceApplication] = {}
    try:
        for name, token in TOKENS.items():
            settings = ServiceSettings.from_env(name, env)
            opened[token] = build_application(
                ServiceApplication, service=token, settings=settings.store
            )
        yield opened
    finally:
        for app in opened.values():
            app.close()


def _query(app: ServiceApplication, statement: str) -> dict[str, Any]:
    """One row, read through the store's own pooled connection."""
    with app.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
        row = conn.execute(statement).fetchone()
        assert row is not None
        return dict(row)


def test_each_service_writes_its_store_as_its_own_role(
    stores: dict[str, ServiceApplication], pg_database: str
) -> None:
    for token, app in stores.items():
        note = Note(text=f"from {token}")
        app.save(note)
        assert app.repository.get(note.id).text == f"from {token}"
        session = _query(app, "SELECT current_user AS role, session_user AS login")
        assert session == {"role": f"clipyard_{token}", "login": f"clipyard_{token}"}
    with psycopg.connect(pg_database) as conn:
        owners = conn.execute(
            "SELECT schemaname, tableowner FROM pg_tables WHERE tablename = 'store_events' "
            "ORDER BY schemaname"
        ).fetchall()
        sessions = conn.execute(
            "SELECT DISTINCT usename, application_name FROM pg_stat_activity "
            "WHERE datname = current_database() AND usename LIKE 'clipyard_%' ORDER BY 1"
        ).fetchall()
    # The tables were created by each service's role in the schema deploy/postgres gave it.
    assert owners == [
        ("clipyard_gateway", "clipyard_gateway"),
        ("clipyard_realizer", "clipyard_realizer"),
    ]
    assert sessions == [
        ("clipyard_gateway", "clipyard_gateway"),
        ("clipyard_realizer", "clipyard_realizer"),
    ]


def test_a_service_cannot_read_or_write_another_services_store(
    stores: dict[str, ServiceApplication],
) -> None:
    for app in stores.values():
        app.save(Note(text="mine"))
    gateway, realizer = stores["gateway"], stores["realizer"]
    for app, other in ((gateway, "clipyard_realizer"), (realizer, "clipyard_gateway")):
        with (
            app.recorder.datastore.get_connection() as conn,  # type: ignore[attr-defined]
            pytest.raises(psycopg.errors.InsufficientPrivilege),
        ):
            conn.execute(f"SELECT count(*) FROM {other}.store_events")
        with (
            app.recorder.datastore.get_connection() as conn,  # type: ignore[attr-defined]
            pytest.raises(psycopg.errors.InsufficientPrivilege),
        ):
            conn.execute(f"CREATE TABLE {other}.intruder (id int)")
