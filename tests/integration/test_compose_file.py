"""docker-compose.yml, checked structurally (no Docker engine runs here), and its PostgreSQL
init script and three-node NATS cluster run for real.

The structure is compared with what the code expects: the five services of ``contracts``, the
settings ``servicekit`` reads, the schema names of ``eventstore``, the NATS users and config file
``clipyard up`` uses, and the secrets ``clipyard compose-env`` generates. The NATS nodes' own
``command`` lists, config files and environments are run with the venv's nats-server,
translating only what a container gives for free: service host names become 127.0.0.1 with free
ports (the route port in a copy of the config folder), mounts become the repository's files and
folders under ``tmp_path``, and ``${...}`` the secrets ``compose-env`` generates.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit

import nats
import psycopg
import pytest
import yaml

from clipyard_cli.compose import ROUTE_PASSWORD_VAR, compose_env_lines
from clipyard_cli.home import NATS_USERS, password_env_var
from clipyard_cli.stack import SERVICE_LAUNCHES, find_nats_config
from contracts.subjects import EVENT_STREAM, SERVICE_NAMES, SERVICES
from eventstore import StoreSettings, ensure_postgres_schema
from eventstore.settings import postgres_schema
from natsbus.connection import connect as natsbus_connect
from natsbus.jetstream import ensure_event_stream
from natsbus.urls import parse_nats_urls
from servicekit import ServiceSettings
from testkit.nats_cluster import ClusterNode, NatsCluster
from testkit.nats_server import NatsServerError, nats_server_binary
from testkit.procutil import free_port, parent_death_signal, stop_process, tail
from workspace_realizer.settings import load_realizer_settings

REPO = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES_BLOCK: dict[str, Any] = COMPOSE["services"]
LAUNCH = {one.name: one for one in SERVICE_LAUNCHES}
SUBSTITUTION = re.compile(r"\$\{(\w+)(:?[-?][^}]*)?\}")
NATS_NODES = sorted(n for n, s in SERVICES_BLOCK.items() if str(s.get("image")).startswith("nats:"))
"""The compose services running nats-server: the nodes of the NATS cluster."""
ROUTES_VAR = "CLIPYARD_NATS_ROUTES"
COMPANY_REALIZER = "workspace-realizer-company"
"""The realizer's company-wide part, a compose service of its own (two replicas)."""
"""A node's routes to the others, login included, in its environment (deploy/nats/cluster.conf)."""


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


SAMPLE_SECRETS = generated_secrets()
"""One set of secrets as ``compose-env`` writes them, for reading URLs that hold one."""


def option(command: list[str], flag: str) -> str:
    """The value after ``flag`` in a command list (given exactly once)."""
    assert command.count(flag) == 1, f"{flag} given {command.count(flag)} times in {command}"
    return command[command.index(flag) + 1]


def mounts(service: str) -> dict[str, str]:
    """A compose service's mounts: the path in the container -> the volume or host path."""
    return {str(v).split(":")[1]: str(v).split(":")[0] for v in SERVICES_BLOCK[service]["volumes"]}


def client_port(node: str) -> int:
    return int(option(SERVICES_BLOCK[node]["command"], "-p"))


def repo_file(service: str, path: str) -> Path:
    """The repository file at ``path`` of ``service``'s container (a bind mount)."""
    for target, source in mounts(service).items():
        if path == target or path.startswith(f"{target}/"):
            assert source.startswith((".", "/")), f"{path} of {service} is on a named volume"
            return (REPO / source).resolve() / path[len(target) :].lstrip("/")
    raise AssertionError(f"{path} of {service} is on no mount of it")


def config_file(node: str) -> Path:
    """The config file the node's nats-server reads (``-c``), in the repository."""
    return repo_file(node, option(SERVICES_BLOCK[node]["command"], "-c"))


def config_code(path: Path) -> str:
    """A NATS config file without comments and with every quoted string emptied."""
    lines = path.read_text().splitlines()
    return "\n".join(re.sub(r'"[^"]*"', '""', line.split("#")[0]) for line in lines)


def config_includes(path: Path) -> list[Path]:
    """The files ``path`` includes, resolved as nats-server does: relative to ``path``."""
    return [
        (path.parent / f).resolve()
        for f in re.findall(r"^\s*include\s+(\S+)", config_code(path), re.M)
    ]


def config_variables(path: Path) -> set[str]:
    """The ``$VARIABLES`` ``path`` reads from the environment (none it defines itself)."""
    code = config_code(path)
    defined = set(re.findall(r"^(\w+)\s*=", code, re.M))
    return {v for v in re.findall(r"\$(\w+)", code) if v not in defined}


def cluster_block(node: str) -> str:
    """The ``cluster { ... }`` block of the node's config."""
    found = re.search(r"^cluster\s*\{(.*?)^\}", config_code(config_file(node)), re.M | re.S)
    assert found, f"{config_file(node)} defines no cluster"
    return found[1]


def cluster_listen(node: str) -> SplitResult:
    """The node's route listener (its config's ``cluster.listen``), as a URL."""
    found = re.search(r"^\s*listen:\s*(\S+)\s*$", cluster_block(node), re.M)
    assert found, f"the cluster of {config_file(node)} has no listen"
    return urlsplit(f"nats://{found[1]}")


def routes(node: str) -> list[SplitResult]:
    """The node's routes (its environment's list), ``${...}`` resolved with :data:`SAMPLE_SECRETS`."""
    value = substitute(str(SERVICES_BLOCK[node]["environment"][ROUTES_VAR]), SAMPLE_SECRETS)
    assert (value[:1], value[-1:]) == ("[", "]"), f"{ROUTES_VAR} is no list: {value}"
    return [urlsplit(u.strip()) for u in value[1:-1].split(",")]


SECOND_NODE = ("workspace-realizer-nodeb", "runtime-supervisor-nodeb")
"""The second worker node's services (``--profile second-node``)."""


def test_every_part_of_the_stack_is_a_compose_service() -> None:
    nats_nodes = {"nats-1", "nats-2", "nats-3"}  # the three nodes of one NATS cluster
    expected = {
        *nats_nodes,
        "postgres",
        "otel-collector",
        "jaeger",
        *SERVICE_NAMES.values(),
        COMPANY_REALIZER,
        *SECOND_NODE,
    }
    assert set(SERVICES_BLOCK) == expected
    assert set(NATS_NODES) == nats_nodes


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
    # Every node of the cluster, by its service name and client port.
    servers = parse_nats_urls(env["CLIPYARD_NATS_URL"])
    assert [(s.host, s.port) for s in servers] == [(n, client_port(n)) for n in NATS_NODES]
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
    assert settings.event_replicas == 3  # WS_EVENTS on three JetStream servers
    assert len(settings.nats.servers) == len(NATS_NODES) == settings.event_replicas
    assert set(SERVICES_BLOCK[name]["depends_on"]) == {*NATS_NODES, "postgres", "otel-collector"}


def test_only_the_gateway_gets_the_admin_key_and_publishes_http() -> None:
    for name in SERVICE_NAMES.values():
        env = SERVICES_BLOCK[name]["environment"]
        assert ("CLIPYARD_ADMIN_KEY" in env) == (name == "api-gateway")
    gateway = SERVICES_BLOCK["api-gateway"]
    assert gateway["environment"]["CLIPYARD_HTTP_HOST"] == "0.0.0.0"
    # One host port per replica, on loopback.
    port = gateway["environment"]["CLIPYARD_HTTP_PORT"]
    assert gateway["ports"] == [f"127.0.0.1:8080-8081:{port}"]


def test_the_control_plane_runs_two_replicas_and_host_bound_services_one() -> None:
    replicas = {
        name: SERVICES_BLOCK[name].get("deploy", {}).get("replicas", 1)
        for name in SERVICE_NAMES.values()
    }
    assert replicas == {
        "api-gateway": 2,
        "heartbeat-controller": 2,
        "git-credentials": 2,
        "workspace-realizer": 1,
        "runtime-supervisor": 1,
    }
    assert SERVICES_BLOCK[COMPANY_REALIZER]["deploy"]["replicas"] == 2
    # Replicas share git-credentials' master key: compose refuses to start without it.
    key = str(SERVICES_BLOCK["git-credentials"]["environment"]["CLIPYARD_SECRET_KEY"])
    assert key.startswith("${CLIPYARD_SECRET_KEY:?")
    # No replica is pinned to an instance id: each gets <hostname>-<pid>-<hex> of its container.
    for name in SERVICE_NAMES.values():
        assert "CLIPYARD_INSTANCE_ID" not in SERVICES_BLOCK[name]["environment"]


def test_the_realizers_company_wide_part_is_the_realizer_image_user_and_store() -> None:
    host, company = SERVICES_BLOCK["workspace-realizer"], SERVICES_BLOCK[COMPANY_REALIZER]
    assert host["environment"]["CLIPYARD_REALIZER_PART"] == "host"
    assert company["environment"]["CLIPYARD_REALIZER_PART"] == "company"
    assert company["build"] == host["build"]
    same = ("CLIPYARD_NATS_USER", "CLIPYARD_NATS_PASSWORD", "CLIPYARD_POSTGRES_DSN")
    assert {k: company["environment"][k] for k in same} == {k: host["environment"][k] for k in same}
    # Both parts' settings accept what compose gives them.
    for block in (host, company):
        env = {k: substitute(str(v), generated_secrets()) for k, v in block["environment"].items()}
        assert load_realizer_settings(env).part == block["environment"]["CLIPYARD_REALIZER_PART"]
    # The company-wide part touches no host folder: not the worktrees.
    worktrees = str(host["volumes"][0]).split(":")[0]
    assert all(not str(v).startswith(f"{worktrees}:") for v in company["volumes"])


def test_a_second_worker_node_joins_with_its_own_node_id_worktrees_and_ports() -> None:
    first = {n: SERVICES_BLOCK[n] for n in ("workspace-realizer", "runtime-supervisor")}
    second = {n: SERVICES_BLOCK[n] for n in SECOND_NODE}
    for block in second.values():
        assert block["profiles"] == ["second-node"]  # only when asked for
        assert block["environment"]["CLIPYARD_NODE_ID"] == "nodeb"
    realizer, supervisor = (second[n] for n in SECOND_NODE)
    assert realizer["build"] == first["workspace-realizer"]["build"]
    assert supervisor["build"] == first["runtime-supervisor"]["build"]
    assert realizer["environment"]["CLIPYARD_REALIZER_PART"] == "host"
    own = {str(b["volumes"][0]).split(":")[0] for b in second.values()}
    theirs = {str(b["volumes"][0]).split(":")[0] for b in first.values()}
    assert len(own) == 1  # its realizer and supervisor share its worktrees
    assert own.isdisjoint(theirs)  # and never the first node's
    assert supervisor["environment"]["CLIPYARD_PORT_RANGE"] == "43000-43999"
    for block in second.values():
        env = {k: substitute(str(v), generated_secrets()) for k, v in block["environment"].items()}
        assert ServiceSettings.from_env("x", env).node_id == "nodeb"


def test_realizer_and_supervisor_share_the_worktrees_and_credentials_keep_their_own() -> None:
    def volume(name: str) -> str:
        return str(SERVICES_BLOCK[name]["volumes"][0]).split(":")[0]

    assert volume("workspace-realizer") == volume("runtime-supervisor")
    others = {volume(n) for n in ("api-gateway", "heartbeat-controller", "git-credentials")}
    assert len(others) == 3
    assert volume("workspace-realizer") not in others


@pytest.mark.parametrize("node", NATS_NODES)
def test_nats_runs_jetstream_with_the_config_the_local_stack_uses(node: str) -> None:
    nats = SERVICES_BLOCK[node]
    assert nats["image"] == "nats:2.10"
    command = nats["command"]
    assert "-js" in command
    # The cluster's config, which includes the very nats.conf `clipyard up` uses (mounted
    # beside it: nats-server resolves an include relative to the including file).
    config = config_file(node)
    assert config == REPO / "deploy" / "nats" / "cluster.conf"
    local_stack = find_nats_config({}, start=REPO)
    assert config_includes(config) == [local_stack]
    assert repo_file(node, str(Path(option(command, "-c")).parent / "nats.conf")) == local_stack
    # Every variable either file reads is given, and every password comes from .env.
    wanted = config_variables(config) | config_variables(local_stack)
    assert wanted == {
        "CLIPYARD_NATS_STORE_DIR",
        *(password_env_var(u) for u in NATS_USERS),
        ROUTE_PASSWORD_VAR,
        ROUTES_VAR,
    }
    assert set(nats["environment"]) == wanted
    for name in (*(password_env_var(u) for u in NATS_USERS), ROUTE_PASSWORD_VAR):
        assert nats["environment"][name].startswith(f"${{{name}:?")


def test_the_nats_nodes_form_one_cluster_each_with_its_own_name_store_and_routes() -> None:
    first = SERVICES_BLOCK[NATS_NODES[0]]

    def shared(service: dict[str, Any]) -> dict[str, Any]:
        """What every node has alike: all but its routes, store volume, name and ports."""
        environment = {k: v for k, v in service["environment"].items() if k != ROUTES_VAR}
        config = [v for v in service["volumes"] if not str(v).endswith(":/data")]
        return {"image": service["image"], "environment": environment, "config": config}

    stores: dict[str, str] = {}
    for node in NATS_NODES:
        service = SERVICES_BLOCK[node]
        command = service["command"]
        # One image, config and environment (the shared anchors) but for the routes.
        assert shared(service) == shared(first)
        assert option(command, "-c") == option(first["command"], "-c")
        assert [a for a in command if a != node] == [
            a for a in first["command"] if a != NATS_NODES[0]
        ]
        assert "-js" in command  # JetStream on each
        assert re.search(r"^\s*name:\s*clipyard\s*$", cluster_block(node), re.M)
        assert option(command, "--server_name") == node  # as its peers and clients name it
        # Its own named volume at the JetStream store folder nats.conf reads.
        volume = mounts(node)[service["environment"]["CLIPYARD_NATS_STORE_DIR"]]
        assert volume in COMPOSE["volumes"]
        stores[node] = volume
        # Listens for routes on every interface of its container; routes to exactly the others,
        # by service name and route port.
        listen = cluster_listen(node)
        assert (listen.hostname, listen.username) == ("0.0.0.0", None)
        assert {(r.hostname, r.port) for r in routes(node)} == {
            (other, cluster_listen(other).port) for other in NATS_NODES if other != node
        }
        # Routes log in as user `route` with the .env secret: the cluster's authorization reads
        # it from the environment, and each route URL carries it (a server logs in to a route
        # with the URL's login only).
        authorization = re.search(
            r"authorization\s*\{\s*user:\s*(\S+)\s+password:\s*\$(\w+)\s*\}", cluster_block(node)
        )
        assert authorization
        assert (authorization[1], authorization[2]) == ("route", ROUTE_PASSWORD_VAR)
        for url in routes(node):
            assert (url.scheme, url.username) == ("nats", "route")
            assert url.password == SAMPLE_SECRETS[ROUTE_PASSWORD_VAR]
        required = f"${{{ROUTE_PASSWORD_VAR}:?"
        assert service["environment"][ROUTES_VAR].count(required) == len(NATS_NODES) - 1
        # Nothing secret on the command line, which every user of the host reads (ps): no
        # substitution at all, no login, no route.
        assert not [a for a in command if "$" in str(a) or "@" in str(a)]
        assert not {"--cluster", "--routes", "--cluster_name"} & set(command)
        # Clients get the whole list of nodes, not the containers' addresses.
        assert "--no_advertise" in command
    assert len(NATS_NODES) == 3
    assert len(set(stores.values())) == len(NATS_NODES)
    # The first node keeps the single server's volume of compose before the cluster.
    assert stores[NATS_NODES[0]] == "nats-data"
    assert ROUTE_PASSWORD_VAR in generated_secrets()


def test_the_nats_nodes_publish_client_and_monitoring_ports_on_loopback_only() -> None:
    published: list[int] = []
    for node in NATS_NODES:
        command = SERVICES_BLOCK[node]["command"]
        ports = [str(p).split(":") for p in SERVICES_BLOCK[node]["ports"]]
        assert all(host == "127.0.0.1" for host, _, _ in ports)
        inside = {int(container) for _, _, container in ports}
        assert inside == {client_port(node), int(option(command, "-m"))}  # never the route port
        published.extend(int(port) for _, port, _ in ports)
    assert len(set(published)) == len(published)
    assert "127.0.0.1:4222:4222" in SERVICES_BLOCK[NATS_NODES[0]]["ports"]  # the CLI's default


def test_postgres_initialises_one_schema_per_service() -> None:
    postgres = SERVICES_BLOCK["postgres"]
    assert postgres["image"] == "postgres:15"
    init_dir = REPO / mounts("postgres")["/docker-entrypoint-initdb.d"]
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


# ---------------------------------------------------------------------------------------------
# The NATS cluster of compose, as processes: each node's own `command`, translated only where a
# container differs from this host.


@dataclass
class ComposeNats:
    """The compose NATS nodes running locally (in ``NATS_NODES`` order) and their secrets."""

    cluster: NatsCluster
    secrets: dict[str, str]


def host_path(service: str, path: str, volumes: Path) -> Path:
    """Where ``path`` of ``service``'s container is here: a bind mount's file in the repository,
    or a named volume's folder under ``volumes``."""
    for target, source in mounts(service).items():
        if path == target or path.startswith(f"{target}/"):
            named = not source.startswith((".", "/"))
            base = volumes / source if named else (REPO / source).resolve()
            return base / path[len(target) :].lstrip("/")
    raise AssertionError(f"{path} of {service} is on no mount of it")


def local_url(url: str, service: str, ports: dict[str, dict[int, int]]) -> str:
    """A URL of ``service``'s (a route) with the service host names (or ``0.0.0.0``, its own
    interfaces) made 127.0.0.1 and the container ports made the local ports; any login kept."""
    parts = urlsplit(url)
    target = service if parts.hostname == "0.0.0.0" else str(parts.hostname)
    assert target in ports, f"{url} names a host that is no NATS service"
    assert parts.port is not None
    login = parts.netloc.rpartition("@")[0]
    netloc = f"{login}@" if login else ""
    return f"{parts.scheme}://{netloc}127.0.0.1:{ports[target][parts.port]}"


def local_config(service: str, path: str, ports: dict[str, dict[int, int]], run: Path) -> Path:
    """``service``'s config file (``path`` in its container) here: a copy of its mounted folder
    (so includes resolve as in the container) whose route listener is on loopback and the
    node's local route port, the one thing a container's own network gives for free."""
    source = host_path(service, path, run)
    folder = run / "config" / service
    shutil.copytree(source.parent, folder)
    config = folder / source.name
    listen = cluster_listen(service)
    assert listen.port is not None
    text = config.read_text()
    line = re.compile(rf"^(\s*listen:\s*){re.escape(str(listen.netloc))}\s*$", re.M)
    local, count = line.subn(rf"\g<1>127.0.0.1:{ports[service][listen.port]}", text)
    assert count == 1, f"no single route listener in {source}"
    config.write_text(local)
    return config


def local_command(
    service: str, ports: dict[str, dict[int, int]], secrets: dict[str, str], run: Path
) -> list[str]:
    """``service``'s compose command for the venv's nats-server on this host."""
    command = [substitute(str(arg), secrets) for arg in SERVICES_BLOCK[service]["command"]]
    local = [str(nats_server_binary())]
    for flag, arg in zip(["", *command], command, strict=False):
        if flag == "-a":
            assert arg == "0.0.0.0"  # every interface of the container: here, loopback
            local.append("127.0.0.1")
        elif flag in ("-p", "-m"):
            local.append(str(ports[service][int(arg)]))
        elif flag == "-c":
            local.append(str(local_config(service, arg, ports, run)))
        else:
            local.append(arg)
    return local


def local_env(
    service: str, ports: dict[str, dict[int, int]], secrets: dict[str, str], volumes: Path
) -> dict[str, str]:
    """``service``'s compose environment here: paths in the container become their mounts, and
    the routes' service host names and route ports the local ones (their login kept)."""
    env = {"PATH": "/usr/bin:/bin"}
    for name, raw in SERVICES_BLOCK[service]["environment"].items():
        value = substitute(str(raw), secrets)
        if name == ROUTES_VAR:
            urls = [local_url(u.strip(), service, ports) for u in value.strip("[]").split(",")]
            env[name] = f"[{', '.join(urls)}]"
        elif value.startswith("/"):
            env[name] = str(host_path(service, value, volumes))
        else:
            env[name] = value
    return env


def start_compose_nats(base: Path, secrets: dict[str, str]) -> ComposeNats:
    for attempt in range(3):  # a free port taken meanwhile: try new ports
        run = base / f"attempt-{attempt}"
        volumes = run / "volumes"
        ports = {
            node: {
                client_port(node): free_port(),
                int(option(SERVICES_BLOCK[node]["command"], "-m")): free_port(),
                int(cluster_listen(node).port or 0): free_port(),
            }
            for node in NATS_NODES
        }
        nodes: list[ClusterNode] = []
        envs: list[dict[str, str]] = []
        for index, node in enumerate(NATS_NODES):
            command = SERVICES_BLOCK[node]["command"]
            env = local_env(node, ports, secrets, volumes)
            store = Path(env["CLIPYARD_NATS_STORE_DIR"])
            store.mkdir(parents=True)  # docker creates a named volume's folder
            nodes.append(
                ClusterNode(
                    index=index,
                    name=option(command, "--server_name"),
                    port=ports[node][client_port(node)],
                    cluster_port=ports[node][int(cluster_listen(node).port or 0)],
                    monitor_port=ports[node][int(option(command, "-m"))],
                    store_dir=store,
                    log_path=run / f"{node}.log",
                    args=local_command(node, ports, secrets, run),
                )
            )
            envs.append(env)
        cluster = NatsCluster("clipyard", nodes, run / "scratch", env={})
        for node_, env in zip(nodes, envs, strict=True):
            with node_.log_path.open("ab") as log:
                node_.process = subprocess.Popen(
                    node_.args,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    preexec_fn=parent_death_signal(signal.SIGTERM),
                )
        try:
            cluster.ready_after = cluster.wait_ready(timeout=20)
        except NatsServerError:
            cluster.stop()
            if attempt == 2:
                raise
            continue
        return ComposeNats(cluster=cluster, secrets=secrets)
    raise AssertionError("unreachable")


def monitor(node: ClusterNode, endpoint: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{node.monitor_url}/{endpoint}", timeout=2) as response:
        return dict(json.load(response))


def monitor_text(node: ClusterNode, endpoint: str) -> str:
    with urllib.request.urlopen(f"{node.monitor_url}/{endpoint}", timeout=2) as response:
        return bytes(response.read()).decode()


def route_peers(node: ClusterNode) -> set[str]:
    return {str(r["remote_name"]) for r in monitor(node, "routez")["routes"]}


@pytest.fixture(scope="module")
def compose_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeNats]:
    running = start_compose_nats(tmp_path_factory.mktemp("compose-nats"), generated_secrets())
    try:
        yield running
    finally:
        running.cluster.stop()


@pytest.mark.integration
def test_the_compose_nats_nodes_form_a_jetstream_cluster(compose_nats: ComposeNats) -> None:
    nodes = compose_nats.cluster.nodes
    names = {node.name for node in nodes}
    assert names == set(NATS_NODES)  # each server is named as its service
    leader = compose_nats.cluster.meta_leader()  # every other node a current peer of it
    assert leader in names
    for node in nodes:
        varz = monitor(node, "varz")
        assert varz["server_name"] == node.name
        assert varz["cluster"]["name"] == "clipyard"
        store = Path(varz["jetstream"]["config"]["store_dir"])
        assert store.is_relative_to(node.store_dir)  # its own volume
        assert route_peers(node) == names - {node.name}
        meta = monitor(node, "jsz")["meta_cluster"]
        assert (meta["cluster_size"], meta["leader"]) == (3, leader)


@pytest.mark.integration
async def test_a_service_login_creates_ws_events_at_r3_on_the_compose_cluster(
    compose_nats: ComposeNats,
) -> None:
    cluster, secrets = compose_nats.cluster, compose_nats.secrets
    # The gateway as compose starts it: every node, its own user and password.
    gateway = await natsbus_connect(
        cluster.url,
        name="api-gateway",
        user="gateway",
        password=secrets[password_env_var("gateway")],
    )
    try:
        info = await ensure_event_stream(gateway.jetstream(), replicas=3)
    finally:
        await gateway.drain()
    assert info.config.name == EVENT_STREAM
    assert info.config.num_replicas == 3
    assert info.cluster is not None
    peers = {info.cluster.leader, *(r.name for r in info.cluster.replicas or [])}
    assert peers == set(NATS_NODES)
    # The CLI, on the last node alone, sees the same replicated stream.
    cli = await natsbus_connect(
        cluster.nodes[-1].url,
        name="clipyard",
        user="cli",
        password=secrets[password_env_var("cli")],
    )
    try:
        seen = await cli.jetstream().stream_info(EVENT_STREAM)
    finally:
        await cli.drain()
    assert seen.config.num_replicas == 3


@pytest.mark.integration
async def test_a_server_without_the_route_password_cannot_join_the_compose_cluster(
    compose_nats: ComposeNats, tmp_path: Path
) -> None:
    cluster, secrets = compose_nats.cluster, compose_nats.secrets
    first, second = cluster.nodes[0], cluster.nodes[1]
    # A server of its own (no config, no users) routing to the first node without a login and
    # to the second with a wrong one: were it let in, its clients would see every subject.
    rogue_port = free_port()
    log_path = tmp_path / "rogue.log"
    args = [
        str(nats_server_binary()),
        *("-a", "127.0.0.1", "-p", str(rogue_port), "--server_name", "rogue"),
        *("--cluster_name", "clipyard", "--cluster", f"nats://127.0.0.1:{free_port()}"),
        "--routes",
        f"nats://127.0.0.1:{first.cluster_port},"
        f"nats://route:wrong{secrets[ROUTE_PASSWORD_VAR]}@127.0.0.1:{second.cluster_port}",
    ]
    with log_path.open("ab") as log:
        rogue = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={"PATH": "/usr/bin:/bin"},
            start_new_session=True,
            preexec_fn=parent_death_signal(signal.SIGTERM),
        )
    refused = re.compile(r"rid:\d+ - Router connection closed: Authentication Failure")
    try:
        deadline = time.monotonic() + 10
        while not all(refused.search(cluster.logs(i)) for i in (0, 1)):
            assert rogue.poll() is None, tail(log_path)
            assert time.monotonic() < deadline, f"no route refused:\n{tail(log_path)}"
            time.sleep(0.05)
        outsider = await nats.connect(f"nats://127.0.0.1:{rogue_port}")
        try:
            heard = await outsider.subscribe(">")
            await outsider.flush()
            gateway = await natsbus_connect(
                cluster.url,
                name="api-gateway",
                user="gateway",
                password=secrets[password_env_var("gateway")],
            )
            await gateway.publish("ws.cmd.probe.route", b"for the cluster only")
            await gateway.drain()
            with pytest.raises(nats.errors.TimeoutError):
                await heard.next_msg(timeout=0.3)
        finally:
            await outsider.close()
    finally:
        stop_process(rogue)
    names = {node.name for node in cluster.nodes}
    password = secrets[ROUTE_PASSWORD_VAR]
    for index, node in enumerate(cluster.nodes):
        assert route_peers(node) == names - {node.name}
        # The route password is in no log and on no monitoring page (published on the host).
        assert password not in cluster.logs(index)
        for endpoint in ("varz", "routez", "connz", "jsz"):
            assert password not in monitor_text(node, endpoint)
        # Nor on any node's command line, which every user of the host reads (ps,
        # /proc/<pid>/cmdline): the nodes, routed to one another with it, got it from their
        # environment, which only their own user reads.
        assert node.process is not None
        proc = Path(f"/proc/{node.process.pid}")
        argv = (proc / "cmdline").read_bytes().split(b"\0")
        assert argv[0] == str(nats_server_binary()).encode()
        assert not [arg for arg in argv if password.encode() in arg], argv
        assert stat.S_IMODE((proc / "cmdline").stat().st_mode) & stat.S_IROTH
        assert password.encode() in (proc / "environ").read_bytes()
        assert not stat.S_IMODE((proc / "environ").stat().st_mode) & (stat.S_IRGRP | stat.S_IROTH)
