"""``clipyard up`` and ``clipyard run`` give each service its own PostgreSQL DSN, and nobody else's;
a ``CLIPYARD_POSTGRES_DSN_*`` naming no service stops them before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from clipyard_cli import run
from clipyard_cli.home import NATS_USERS
from clipyard_cli.main import main
from clipyard_cli.stack import SERVICE_LAUNCHES, nats_server_env, service_env
from clipyard_cli.up import run_up
from contracts.subjects import SERVICES

COMMON = "postgresql://clipyard:common-secret@db:5432/clipyard"
OWN = {
    token: f"postgresql://clipyard_{token}:{token}-secret@db:5432/clipyard" for token in SERVICES
}


def _env_of(token: str, base: dict[str, str], home: Path) -> dict[str, str]:
    launch = next(one for one in SERVICE_LAUNCHES if one.token == token)
    return service_env(
        base, launch, home=home, nats_url="nats://127.0.0.1:1", password="p", admin_key="k"
    )


def test_each_service_gets_its_own_dsn_and_no_other_services(tmp_path: Path) -> None:
    base = {
        "CLIPYARD_STORE": "postgres",
        "CLIPYARD_POSTGRES_DSN": COMMON,
        "CLIPYARD_POSTGRES_DSN_GATEWAY": OWN["gateway"],
        "CLIPYARD_POSTGRES_DSN_REALIZER": OWN["realizer"],
    }
    for token in SERVICES:
        env = _env_of(token, base, tmp_path)
        expected = OWN[token] if token in ("gateway", "realizer") else COMMON
        assert env["CLIPYARD_POSTGRES_DSN"] == expected, token
        # Only its own DSN, under the one name the service reads: another service's password
        # never reaches it.
        dsns = {k: v for k, v in env.items() if k.startswith("CLIPYARD_POSTGRES_DSN")}
        assert dsns == {"CLIPYARD_POSTGRES_DSN": expected}, token


def test_without_any_dsn_nothing_is_set_and_nats_gets_none(tmp_path: Path) -> None:
    env = _env_of("controller", {"CLIPYARD_STORE": "sqlite"}, tmp_path)
    assert "CLIPYARD_POSTGRES_DSN" not in env
    base = {"CLIPYARD_POSTGRES_DSN": COMMON, "CLIPYARD_POSTGRES_DSN_GATEWAY": OWN["gateway"]}
    nats = nats_server_env(base, tmp_path, dict.fromkeys(NATS_USERS, "pw"))
    assert not [k for k in nats if k.startswith("CLIPYARD_POSTGRES_DSN")]


def test_a_dsn_naming_no_service_is_refused_by_service_env(tmp_path: Path) -> None:
    base = {"CLIPYARD_POSTGRES_DSN_WORKSPACE_REALIZER": OWN["realizer"]}
    with pytest.raises(ValueError, match="use CLIPYARD_POSTGRES_DSN_REALIZER"):
        _env_of("realizer", base, tmp_path)


async def test_up_refuses_a_dsn_naming_no_service_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {
        "CLIPYARD_HOME": str(tmp_path / "home"),
        "CLIPYARD_STORE": "postgres",
        "CLIPYARD_POSTGRES_DSN": COMMON,
        "CLIPYARD_POSTGRES_DSN_GIT_CREDENTIALS": OWN["credentials"],
    }
    assert await run_up(env) == 1
    err = capsys.readouterr().err
    assert "CLIPYARD_POSTGRES_DSN_GIT_CREDENTIALS names no service" in err
    assert "use CLIPYARD_POSTGRES_DSN_CREDENTIALS" in err
    assert "credentials-secret" not in err
    assert not (tmp_path / "home").exists()  # nothing written, nothing started


async def test_up_refuses_postgres_when_a_service_has_no_dsn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {
        "CLIPYARD_HOME": str(tmp_path / "home"),
        "CLIPYARD_STORE": "postgres",
        **{f"CLIPYARD_POSTGRES_DSN_{t.upper()}": OWN[t] for t in SERVICES if t != "controller"},
    }
    assert await run_up(env) == 1
    assert "needs CLIPYARD_POSTGRES_DSN_CONTROLLER or CLIPYARD_POSTGRES_DSN" in (
        capsys.readouterr().err
    )


def test_run_refuses_a_dsn_naming_no_service(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLIPYARD_HOME", str(tmp_path))
    monkeypatch.setenv("CLIPYARD_NATS_PASSWORD", "p")
    monkeypatch.setenv("CLIPYARD_ADMIN_KEY", "k")
    monkeypatch.setenv("CLIPYARD_POSTGRES_DSN_API_GATEWAY", OWN["gateway"])

    def no_exec(*args: object) -> None:
        raise AssertionError("the service would have started")

    monkeypatch.setattr(run.os, "execve", no_exec)
    assert main(["run", "api-gateway"]) == 2
    err = capsys.readouterr().err
    assert "CLIPYARD_POSTGRES_DSN_API_GATEWAY names no service" in err
    assert "gateway-secret" not in err
