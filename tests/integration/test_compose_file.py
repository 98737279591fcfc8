"""docker-compose.yml, checked structurally (no Docker engine runs here), and its PostgreSQL
init script run for real.

The structure is compared with what the code expects: the five services of ``contracts``, the
settings ``servicekit`` reads, the schema names of ``eventstore``, the NATS users and config file
``clipyard up`` uses, and the secrets ``clipyard compose-env`` generates.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
import yaml

from clipyard_cli.compose import compose_env_lines
from clipyard_cli.home import NATS_USERS, password_env_var
from clipyard_cli.stack import SERVICE_LAUNCHES, find_nats_config
from contracts.subjects import SERVICE_NAMES, SERVICES
from eventstore import StoreSettings, ensure_postgres_schema
from eventstore.settings import postgres_schema
from servicekit import ServiceSettings

REPO = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES_BLOCK: dict[str, Any] = COMPOSE["services"]
LAUNCH = {one.name: one for one in SERVICE_LAUNCHES}
SUBSTITUTION = re.compile(r"\$\{(\w+)(:?[-?][^}]*)?\}")


def substitute(value: str, secrets: dict[str, str]) -> str:
    """What docker compose makes of ``${VAR:?...}`` and ``${VAR:-default}`` given ``secrets``."""

    def one(match: re.Match[str]) -> str:
        name, rest = match[1], match[2] or ""
        if name in secrets:
            return secrets[name]
        if rest.startswith((":-", "-")):
            return rest.split("-", 1)[1]
        raise AssertionError(f"${{{name}}} has no value and no default")

    return SUBSTITUTION.sub(one, value)


def generated_secrets() -> dict[str, str]:
    return dict(line.split("=", 1) for line in compose_env_lines())


def test_every_part_of_the_stack_is_a_compose_service() -> None:
    expected = {"nats", "postgres", "otel-collector", "jaeger", *SERVICE_NAMES.values()}
    assert set(SERVICES_BLOCK) == expected


@pytest.mark.parametrize("name", sorted(SERVICE_NAMES.values()))
def test_each_service_is_built_from_the_root_with_its_own_dockerfile(name: str) -> None:
    build = SERVICES_BLOCK[name]["build"]
    assert (REPO / build["context"]).resolve() == REPO
    assert build["dockerfile"] == f"deploy/docker/{name}.Dockerfile"
    dockerfile = (REPO / build["dockerfile"]).read_text()
    assert re.search(r"^FROM python:3\.11-slim$", dockerfile, re.M)
    assert f"uv sync --package clipyard-{name} --frozen --no-dev" in dockerfile
    module = LAUNCH[name].module
    assert f'"-m", "{module}"]' in dockerfile
    assert (REPO / "services" / name / "src" / module).is_dir()
    assert f'name = "clipyard-{name}"' in (REPO / "services" / name / "pyproject.toml").read_text()
    ignore = (REPO / f"deploy/docker/{name}.Dockerfile.dockerignore").read_text()
    assert "**/.venv" in ignore


@pytest.mark.parametrize("name", sorted(SERVICE_NAMES.values()))
def test_each_service_gets_its_nats_user_postgres_store_and_the_collector(name: str) -> None:
    token = LAUNCH[name].token
    env = {k: str(v) for k, v in SERVICES_BLOCK[name]["environment"].items()}
    assert env["CLIPYARD_NATS_URL"] == "nats://nats:4222"
    assert env["CLIPYARD_NATS_USER"] == token
    assert env["CLIPYARD_NATS_PASSWORD"].startswith(f"${{{password_env_var(token)}:?")
    assert env["CLIPYARD_STORE"] == "postgres"
    assert env["CLIPYARD_HOME"] == "/var/lib/clipyard"
    dsn = urlsplit(substitute(env["CLIPYARD_POSTGRES_DSN"], generated_secrets()))
    assert (dsn.hostname, dsn.port, dsn.path) == ("postgres", 5432, "/clipyard")
    assert dsn.username == postgres_schema(token)
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    assert env["OTEL_TRACES_EXPORTER"] == "otlp"
    # The settings object of every service accepts what compose gives it.
    settings = ServiceSettings.from_env(
        name, {k: substitute(v, generated_secrets()) for k, v in env.items()}
    )
    assert settings.store.kind == "postgres"
    assert settings.nats.user == token
    assert set(SERVICES_BLOCK[name]["depends_on"]) == {"nats", "postgres", "otel-collector"}


def test_only_the_gateway_gets_the_admin_key_and_publishes_http() -> None:
    for name in SERVICE_NAMES.values():
        env = SERVICES_BLOCK[name]["environment"]
        assert ("CLIPYARD_ADMIN_KEY" in env) == (name == "api-gateway")
    gateway = SERVICES_BLOCK["api-gateway"]
    assert gateway["environment"]["CLIPYARD_HTTP_HOST"] == "0.0.0.0"
    assert gateway["ports"] == [f"127.0.0.1:8080:{gateway['environment']['CLIPYARD_HTTP_PORT']}"]


def test_realizer_and_supervisor_share_the_worktrees_and_credentials_keep_their_own() -> None:
    def volume(name: str) -> str:
        return str(SERVICES_BLOCK[name]["volumes"][0]).split(":")[0]

    assert volume("workspace-realizer") == volume("runtime-supervisor")
    others = {volume(n) for n in ("api-gateway", "heartbeat-controller", "git-credentials")}
    assert len(others) == 3
    assert volume("workspace-realizer") not in others


def test_nats_runs_jetstream_with_the_config_the_local_stack_uses() -> None:
    nats = SERVICES_BLOCK["nats"]
    assert nats["image"] == "nats:2.10"
    command = nats["command"]
    assert "-js" in command
    mounted = {str(v).split(":")[1]: str(v).split(":")[0] for v in nats["volumes"]}
    config_in_container = command[command.index("-c") + 1]
    assert (REPO / mounted[config_in_container]).resolve() == find_nats_config({}, start=REPO)
    # Every variable the config reads is given, and every user's password comes from .env.
    lines = find_nats_config({}, start=REPO).read_text().splitlines()
    config = "\n".join(re.sub(r'"[^"]*"', '""', line.split("#")[0]) for line in lines)
    defined = set(re.findall(r"^(\w+)\s*=", config, re.M))
    wanted = {v for v in re.findall(r"\$(\w+)", config) if v not in defined}
    assert wanted == {"CLIPYARD_NATS_STORE_DIR", *(password_env_var(u) for u in NATS_USERS)}
    assert set(nats["environment"]) == wanted
    for user in NATS_USERS:
        assert nats["environment"][password_env_var(user)].startswith(
            f"${{{password_env_var(user)}:?"
        )


def test_postgres_initialises_one_schema_per_service() -> None:
    postgres = SERVICES_BLOCK["postgres"]
    assert postgres["image"] == "postgres:15"
    mounts = {str(v).split(":")[1]: str(v).split(":")[0] for v in postgres["volumes"]}
    init_dir = REPO / mounts["/docker-entrypoint-initdb.d"]
    assert init_dir == REPO / "deploy" / "postgres"
    script = init_dir / "10-clipyard-schemas.sh"
    assert os.access(script, os.X_OK)
    text = script.read_text()
    assert f"for service in {' '.join(SERVICES)}; do" in text
    for token in SERVICES:
        assert f"CLIPYARD_PG_PASSWORD_{token.upper()}" in postgres["environment"]


def test_the_collector_sends_traces_to_jaeger() -> None:
    collector = SERVICES_BLOCK["otel-collector"]
    mount = str(collector["volumes"][0]).split(":")
    assert (REPO / mount[0]).resolve() == REPO / "deploy" / "otel" / "collector.yaml"
    assert collector["command"] == [f"--config={mount[1]}"]
    config = yaml.safe_load((REPO / "deploy" / "otel" / "collector.yaml").read_text())
    assert config["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")
    traces = config["service"]["pipelines"]["traces"]
    assert traces["receivers"] == ["otlp"]
    assert config["exporters"]["otlp/jaeger"]["endpoint"] == "jaeger:4317"
    assert "otlp/jaeger" in traces["exporters"]
    assert "jaeger" in SERVICES_BLOCK


def test_every_secret_compose_needs_is_generated_by_compose_env() -> None:
    text = (REPO / "docker-compose.yml").read_text()
    required = {m[1] for m in SUBSTITUTION.finditer(text) if (m[2] or "").startswith(":?")}
    assert required == set(generated_secrets())


@pytest.mark.integration
def test_the_init_script_isolates_each_services_schema(pg_database: str, tmp_path: Path) -> None:
    dsn = urlsplit(pg_database)
    database = dsn.path.lstrip("/")
    env = {
        "PATH": os.environ["PATH"],
        "PGHOST": dsn.hostname or "127.0.0.1",
        "PGPORT": str(dsn.port or 5432),
        "PGPASSWORD": dsn.password or "",
        "POSTGRES_USER": dsn.username or "postgres",
        "POSTGRES_DB": database,
        **{f"CLIPYARD_PG_PASSWORD_{t.upper()}": f"pw{t}" for t in SERVICES},
    }
    script = REPO / "deploy" / "postgres" / "10-clipyard-schemas.sh"
    for _ in range(2):  # running it again changes nothing (the roles and schemas exist)
        run = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr

    def as_role(token: str) -> str:
        netloc = f"{postgres_schema(token)}:pw{token}@{dsn.hostname}:{dsn.port}"
        return f"postgresql://{netloc}/{database}"

    realizer = as_role("realizer")
    # The service's own start-up step is a no-op on the schema it owns.
    settings = StoreSettings(kind="postgres", home=tmp_path, postgres_dsn=realizer)
    assert ensure_postgres_schema(settings, "realizer") == "clipyard_realizer"
    with psycopg.connect(realizer, autocommit=True) as conn:
        conn.execute("CREATE TABLE clipyard_realizer.probe (id int)")
        conn.execute("INSERT INTO clipyard_realizer.probe VALUES (1)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE clipyard_gateway.intruder (id int)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE public.intruder (id int)")
    with (
        psycopg.connect(as_role("gateway"), autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute("SELECT * FROM clipyard_realizer.probe")
