"""The PostgreSQL store connects with the DSN's whole conninfo: several hosts tried in turn,
``target_session_attrs`` and TLS settings honoured, on real servers (ARCHITECTURE §3, §8)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from eventsourcing.persistence import PersistenceError
from eventstore_sample import GatewayApp
from psycopg import sql

from eventstore import StoreSettings, build_application, eventsourcing_env
from eventstore.postgres_factory import ClipyardPostgresFactory
from eventstore.settings import POSTGRES_CONNINFO_SETTING, POSTGRES_FACTORY_TOPIC
from testkit.docker import docker_available
from testkit.postgres import PostgresServer, start_local_postgres, start_postgres_container
from testkit.procutil import free_port


def _parts(dsn: str) -> tuple[str, int, str]:
    """Host, port and database of a test server's DSN."""
    url = urlsplit(dsn)
    return url.hostname or "127.0.0.1", url.port or 5432, url.path.lstrip("/")


def _login(dsn: str) -> str:
    """``user:password`` of a test server's DSN (both test servers share them)."""
    url = urlsplit(dsn)
    return f"{url.username}:{url.password or ''}"


def _open(dsn: str, tmp_path: Path, service: str = "gateway") -> GatewayApp:
    settings = StoreSettings(kind="postgres", home=tmp_path, postgres_dsn=dsn)
    return build_application(GatewayApp, service=service, settings=settings)


def _session(app: GatewayApp) -> dict[str, Any]:
    """Who and where the store's own pooled connection is."""
    with app.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
        row = conn.execute(
            "SELECT current_user AS user, inet_server_port() AS port, "
            "current_setting('application_name') AS application, "
            "pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS read_only"
        ).fetchone()
        assert row is not None
        return dict(row)


def test_the_store_uses_the_clipyard_factory_and_needs_its_conninfo(tmp_path: Path) -> None:
    env = eventsourcing_env(
        StoreSettings(kind="postgres", home=tmp_path, postgres_dsn="host=db dbname=x"), "gateway"
    )
    assert env["PERSISTENCE_MODULE"] == POSTGRES_FACTORY_TOPIC
    # The factory refuses to fall back to the library's keyword arguments.
    env.pop(POSTGRES_CONNINFO_SETTING)
    with pytest.raises(OSError, match=POSTGRES_CONNINFO_SETTING):
        ClipyardPostgresFactory(env)


@pytest.fixture(scope="module")
def read_only_server() -> Iterator[PostgresServer]:
    """A second PostgreSQL that accepts connections but only read-only sessions, as a hot
    standby does (``default_transaction_read_only``, which libpq checks for read-write)."""
    try:
        server = start_postgres_container() if docker_available() else start_local_postgres()
    except Exception as error:
        pytest.fail(f"no second PostgreSQL for the tests: {error}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


def _make_read_only(server: PostgresServer, database: str) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database])
        if exists.fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
        conn.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        conn.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with psycopg.connect(server.dsn) as conn:
            row = conn.execute("SHOW default_transaction_read_only").fetchone()
        if row is not None and row[0] == "on":
            return
        time.sleep(0.05)
    pytest.fail("the second server did not turn read-only")


@pytest.fixture
def hung_port() -> Iterator[int]:
    """A port that completes the TCP handshake and then never answers, as a host that froze
    (or whose traffic is dropped) does: only a connect timeout gets past it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


@pytest.mark.integration
def test_a_dead_first_host_fails_over_to_the_next(pg_database: str, tmp_path: Path) -> None:
    host, port, database = _parts(pg_database)
    dead = free_port()  # nothing listens there: the connection is refused at once
    # The usual HA form: every host of the cluster, and the session must take writes.
    dsn = (
        f"postgresql://{_login(pg_database)}@{host}:{dead},{host}:{port}/{database}"
        "?target_session_attrs=read-write"
    )
    app = _open(dsn, tmp_path)
    try:
        company = app.create_company("Acme", "ACME")
        app.rename(company, "Acme Corp")
        assert _session(app)["port"] == port
    finally:
        app.close()
    with psycopg.connect(pg_database) as conn:
        stored = conn.execute("SELECT count(*) FROM clipyard_gateway.store_events").fetchone()
    assert stored is not None
    assert stored[0] == 2


@pytest.mark.integration
def test_a_hung_first_host_is_given_up_after_connect_timeout(
    pg_database: str, hung_port: int, tmp_path: Path
) -> None:
    host, port, database = _parts(pg_database)
    user, password = _login(pg_database).split(":", 1)
    first = _open(pg_database, tmp_path)
    try:
        company = first.create_company("Acme", "ACME")
    finally:
        first.close()
    # key=value form this time. libpq gives each host connect_timeout seconds and the store's
    # pool waits long enough for every host to have its turn.
    started = time.monotonic()
    again = _open(
        f"host={host},{host} port={hung_port},{port} dbname={database} user={user} "
        f"password={password or 'x'} connect_timeout=2",
        tmp_path,
    )
    try:
        assert again.repository.get(company).name == "Acme"
        assert again.read_models()["companies"][str(company)]["name"] == "Acme"
        assert _session(again)["port"] == port
    finally:
        again.close()
    assert time.monotonic() - started < 30


@pytest.mark.integration
def test_read_write_skips_a_read_only_first_host(
    pg_database: str, read_only_server: PostgresServer, tmp_path: Path
) -> None:
    host, port, database = _parts(pg_database)
    ro_host, ro_port, _ = _parts(read_only_server.dsn)
    _make_read_only(read_only_server, database)
    hosts = f"postgresql://{_login(pg_database)}@{ro_host}:{ro_port},{host}:{port}/{database}"

    # Without target_session_attrs libpq takes the first host that answers: the read-only one,
    # where the store cannot even create its schema.
    with pytest.raises((psycopg.Error, PersistenceError), match="read-only"):
        _open(hosts, tmp_path).close()

    app = _open(f"{hosts}?target_session_attrs=read-write", tmp_path)
    try:
        company = app.create_company("Acme", "ACME")
        app.tick(company, 2)
        session = _session(app)
        assert (session["port"], session["read_only"]) == (port, False)
        assert session["application"] == "clipyard_gateway"
        with app.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
            assert "target_session_attrs=read-write" in conn.info.dsn
    finally:
        app.close()
    with psycopg.connect(pg_database) as conn:
        stored = conn.execute("SELECT count(*) FROM clipyard_gateway.store_events").fetchone()
    assert stored is not None
    assert stored[0] == 3
    with psycopg.connect(read_only_server.dsn.rsplit("/", 1)[0] + f"/{database}") as conn:
        schemas = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'clipyard_gateway'"
        ).fetchone()
    assert schemas is not None
    assert schemas[0] == 0


@pytest.mark.integration
def test_tls_settings_reach_libpq(pg_database: str, tmp_path: Path) -> None:
    # The test server speaks no TLS: sslmode=require must fail to connect (once it was dropped
    # by the library, or refused by Clipyard), and sslmode=disable connects.
    separator = "&" if "?" in pg_database else "?"
    with pytest.raises((psycopg.Error, PersistenceError), match="SSL"):
        _open(f"{pg_database}{separator}sslmode=require&connect_timeout=3", tmp_path).close()
    app = _open(f"{pg_database}{separator}sslmode=disable&application_name=probe", tmp_path)
    try:
        assert _session(app)["application"] == "probe"
        with app.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]
            assert conn.info.pgconn.ssl_in_use is False
    finally:
        app.close()


@pytest.mark.integration
def test_several_hosts_none_alive_names_each_attempt(tmp_path: Path) -> None:
    first, second = free_port(), free_port()
    dsn = f"host=127.0.0.1,127.0.0.1 port={first},{second} dbname=x user=postgres connect_timeout=2"
    with pytest.raises(psycopg.OperationalError) as caught:
        _open(dsn, tmp_path).close()
    assert str(first) in str(caught.value)
    assert str(second) in str(caught.value)
