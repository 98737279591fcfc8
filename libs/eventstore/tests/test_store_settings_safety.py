"""Store settings never weaken what was asked: every DSN parameter reaches the store's connection,
the few it cannot work with are refused, and the SQLite folder is private."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from eventstore import StoreSettings, ensure_postgres_schema, eventsourcing_env
from eventstore.settings import (
    POSTGRES_CONNINFO_SETTING,
    POSTGRES_FACTORY_TOPIC,
    postgres_params,
)


def _postgres(dsn: str, home: Path) -> StoreSettings:
    return StoreSettings(kind="postgres", home=home, postgres_dsn=dsn)


@pytest.mark.parametrize(
    ("dsn", "named"),
    [
        ("postgresql://u:pw@db:5432/x?replication=database", ["replication"]),
        ("host=db dbname=x user=u password=pw replication=true", ["replication"]),
        (
            "postgresql://u:pw@db1,db2/x?target_session_attrs=standby",
            ["target_session_attrs"],
        ),
        ("host=db dbname=x target_session_attrs=read-only", ["target_session_attrs"]),
        (
            "postgresql://u@db1,db2/x?target_session_attrs=prefer-standby&replication=on",
            ["replication", "target_session_attrs"],
        ),
    ],
)
def test_parameters_the_store_cannot_work_with_are_refused_by_name(
    tmp_path: Path, dsn: str, named: list[str]
) -> None:
    # The store writes (LOCK TABLE, INSERT): a replication session or one meant to land on a
    # read-only server could never save an event.
    with pytest.raises(ValueError, match="CLIPYARD_POSTGRES_DSN sets") as caught:
        eventsourcing_env(_postgres(dsn, tmp_path), "gateway")
    message = str(caught.value)
    assert [name for name in ("replication", "target_session_attrs") if name in message] == named
    # Values may be secret (a password, sslpassword): never shown.
    for secret_looking in ("pw", "db1", "database", "prefer-standby", "read-only"):
        assert secret_looking not in message


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://u:pw@db:5432/x?sslmode=verify-full&sslrootcert=/ca.pem",
        "host=db dbname=x user=u sslmode=require",
        "postgresql://u@db/x?options=-csearch_path%3Dother",
        "postgresql://u@db1,db2/x?target_session_attrs=read-write&application_name=a",
        "host=db hostaddr=10.0.0.9 dbname=x",
        "host=a,b port=5432,5433 dbname=x target_session_attrs=primary replication=off",
    ],
)
def test_every_other_libpq_parameter_reaches_the_store_connection(tmp_path: Path, dsn: str) -> None:
    # These were refused while the library connected with host/port/user/password only; the
    # store now connects with the whole conninfo, so each one is in it, unchanged.
    env = eventsourcing_env(_postgres(dsn, tmp_path), "gateway")
    conninfo = conninfo_to_dict(env[POSTGRES_CONNINFO_SETTING])
    for name, value in conninfo_to_dict(dsn).items():
        assert conninfo[name] == value, name
    assert env["PERSISTENCE_MODULE"] == POSTGRES_FACTORY_TOPIC


def test_ensure_schema_refuses_before_connecting(tmp_path: Path) -> None:
    # Nothing listens on port 1: a connection attempt would be a psycopg error, not this.
    settings = _postgres("postgresql://u@127.0.0.1:1/x?target_session_attrs=standby", tmp_path)
    with pytest.raises(ValueError, match="target_session_attrs"):
        ensure_postgres_schema(settings, "gateway")


def test_honoured_parameters_pass_through(tmp_path: Path) -> None:
    dsn = "postgresql://u:pw@db:5433/events?connect_timeout=7&sslmode=prefer"
    env = eventsourcing_env(_postgres(dsn, tmp_path), "gateway")
    assert (env["POSTGRES_HOST"], env["POSTGRES_PORT"]) == ("db", "5433")
    assert (env["POSTGRES_USER"], env["POSTGRES_PASSWORD"]) == ("u", "pw")
    assert (env["POSTGRES_DBNAME"], env["POSTGRES_CONNECT_TIMEOUT"]) == ("events", "7")
    assert postgres_params("hostaddr=10.0.0.9 dbname=x")["hostaddr"] == "10.0.0.9"


def test_a_dsn_that_does_not_parse_is_refused_without_echoing_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a libpq connection string") as caught:
        eventsourcing_env(_postgres("password=hunter2 nonsense", tmp_path), "gateway")
    assert "hunter2" not in str(caught.value)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o002)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_sqlite_creates_a_private_data_folder_and_home(tmp_path: Path, loose_umask: None) -> None:
    home = tmp_path / "fresh-home"
    eventsourcing_env(StoreSettings(kind="sqlite", home=home), "gateway")
    assert _mode(home) == 0o700
    assert _mode(home / "data") == 0o700


def test_an_existing_home_keeps_its_mode(tmp_path: Path, loose_umask: None) -> None:
    tmp_path.chmod(0o755)
    eventsourcing_env(StoreSettings(kind="sqlite", home=tmp_path), "gateway")
    assert _mode(tmp_path) == 0o755
    assert _mode(tmp_path / "data") == 0o700
