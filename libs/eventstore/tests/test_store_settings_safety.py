"""Store settings never weaken what was asked: DSN parameters the store cannot honour are refused,
and the SQLite folder is private."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventstore import StoreSettings, ensure_postgres_schema, eventsourcing_env
from eventstore.settings import postgres_params


def _postgres(dsn: str, home: Path) -> StoreSettings:
    return StoreSettings(kind="postgres", home=home, postgres_dsn=dsn)


@pytest.mark.parametrize(
    ("dsn", "named"),
    [
        (
            "postgresql://u:pw@db:5432/x?sslmode=verify-full&sslrootcert=/ca.pem",
            ["sslmode", "sslrootcert"],
        ),
        ("host=db dbname=x user=u sslmode=require", ["sslmode"]),
        ("postgresql://u@db/x?options=-csearch_path%3Dother", ["options"]),
        (
            "postgresql://u@db1,db2/x?target_session_attrs=read-write&application_name=a",
            ["application_name", "target_session_attrs"],
        ),
        ("host=db hostaddr=10.0.0.9 dbname=x", ["hostaddr (together with host)"]),
    ],
)
def test_parameters_the_store_would_drop_are_refused_by_name(
    tmp_path: Path, dsn: str, named: list[str]
) -> None:
    with pytest.raises(ValueError, match="CLIPYARD_POSTGRES_DSN sets") as caught:
        eventsourcing_env(_postgres(dsn, tmp_path), "gateway")
    message = str(caught.value)
    assert f"sets {', '.join(named)}, which" in message
    # Values may be secret (sslpassword, a password in options): never shown.
    for secret_looking in ("pw", "/ca.pem", "search_path", "10.0.0.9", "read-write"):
        assert secret_looking not in message


def test_ensure_schema_refuses_before_connecting(tmp_path: Path) -> None:
    # Nothing listens on port 1: a connection attempt would be a psycopg error, not this.
    settings = _postgres("postgresql://u@127.0.0.1:1/x?sslmode=verify-full", tmp_path)
    with pytest.raises(ValueError, match="sslmode"):
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
