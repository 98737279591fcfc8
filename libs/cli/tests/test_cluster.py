"""`clipyard cluster up` without starting anything: its command line, ports, home, the replicas'
environments and the NATS nodes' configuration."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from clipyard_cli.clusternats import NatsCluster, nats_nodes
from clipyard_cli.clusternodes import hidden_homes_argv, worker_nodes
from clipyard_cli.clusterprocs import ClusterPorts
from clipyard_cli.clusterservices import ReplicaSettings, build_replicas
from clipyard_cli.clusterup import cluster_home
from clipyard_cli.main import build_parser
from clipyard_cli.stack import StackError
from contracts.subjects import SERVICES
from servicekit.settings import log_rotation


def test_cluster_up_parses_with_defaults_and_options() -> None:
    args = build_parser().parse_args(["cluster", "up"])
    assert (args.command, args.cluster_command) == ("cluster", "up")
    assert (args.home, args.http_port, args.nats_port) == (None, 8180, 4322)
    args = build_parser().parse_args(
        ["cluster", "up", "--home", "/tmp/c", "--http-port", "9000", "--nats-port", "5000"]
    )
    assert (args.home, args.http_port, args.nats_port) == ("/tmp/c", 9000, 5000)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["cluster"])


def test_the_home_is_the_option_else_clipyard_home_else_its_own(tmp_path: Path) -> None:
    assert cluster_home(str(tmp_path / "a"), {"CLIPYARD_HOME": "/x"}) == tmp_path / "a"
    assert cluster_home(None, {"CLIPYARD_HOME": str(tmp_path / "b")}) == tmp_path / "b"
    assert cluster_home(None, {}) == Path("~/.clipyard-cluster").expanduser().resolve()


def test_ports_derive_from_two_bases_and_a_taken_one_is_refused_by_option() -> None:
    ports = ClusterPorts.from_bases(8180, 4322)
    assert ports.http == (8180, 8181)
    assert ports.nats == (4322, 4323, 4324)
    assert ports.routes == (4332, 4333, 4334)
    assert ports.monitors == (4342, 4343, 4344)
    with pytest.raises(ValueError, match="out of range"):
        ClusterPorts.from_bases(65535, 4322)
    free = ClusterPorts.free()
    assert len(set(free.every())) == 11
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        taken = ClusterPorts(
            http=(port, free.http[1]), nats=free.nats, routes=free.routes, monitors=free.monitors
        )
        with pytest.raises(StackError, match=f"port {port} .* --http-port"):
            taken.require_free()


def _settings(tmp_path: Path) -> ReplicaSettings:
    return ReplicaSettings(
        home=tmp_path,
        nats_urls=("nats://127.0.0.1:1", "nats://127.0.0.1:2", "nats://127.0.0.1:3"),
        passwords={user: f"pw-{user}" for user in (*SERVICES, "cli")},
        admin_key="admin-secret",
        secret_key="vault-secret",
        dsns={t: f"postgresql://clipyard_{t}:x@127.0.0.1:5/clipyard" for t in SERVICES},
        http_ports=(7001, 7002),
        nodes=worker_nodes(tmp_path, {}),
    )


def test_replicas_get_their_own_identity_login_dsn_and_only_their_secrets(tmp_path: Path) -> None:
    caller = {
        "PATH": "/usr/bin",
        "CLIPYARD_INSTANCE_ID": "mine",
        "CLIPYARD_POSTGRES_DSN_WORKSPACE_REALIZER": "postgresql://typo",
        "CLIPYARD_STORE": "sqlite",
        "CLIPYARD_NATS_PASSWORD_CLI": "leak",
    }
    replicas = build_replicas(caller, _settings(tmp_path))
    ids = {r.instance_id for r in replicas}
    replicated = ("api-gateway", "heartbeat-controller", "git-credentials")
    realizers = {f"workspace-realizer-{i}" for i in (1, 2, 3, 4)}
    supervisors = {"runtime-supervisor-1", "runtime-supervisor-2"}
    assert ids == {f"{s}-{i}" for s in replicated for i in (1, 2)} | realizers | supervisors
    parts = {r.instance_id: r.env.get("CLIPYARD_REALIZER_PART") for r in replicas}
    # The first node's host part is started first, alone; the company-wide part runs twice; the
    # second node has a host part of its own.
    assert [parts[f"workspace-realizer-{i}"] for i in (1, 2, 3, 4)] == [
        "host",
        "company",
        "company",
        "host",
    ]
    assert {parts[i] for i in ids - realizers} == {None}
    second = tmp_path.with_name(f"{tmp_path.name}-nodeb")
    by_id = {r.instance_id: r for r in replicas}
    for name in ("workspace-realizer-4", "runtime-supervisor-2"):  # the second worker node
        env = by_id[name].env
        assert (env["CLIPYARD_NODE_ID"], env["CLIPYARD_HOME"]) == ("nodeb", str(second))
        assert by_id[name].hidden == (tmp_path,)
    assert by_id["runtime-supervisor-2"].env["CLIPYARD_PORT_RANGE"] == "43000-43999"
    for name in ("workspace-realizer-1", "runtime-supervisor-1"):
        assert by_id[name].env["CLIPYARD_NODE_ID"] == "local"
        assert by_id[name].hidden == (second,)
    hiding = sorted(r.instance_id for r in replicas if r.hidden)  # worker nodes only
    assert hiding == [
        "runtime-supervisor-1",
        "runtime-supervisor-2",
        "workspace-realizer-1",
        "workspace-realizer-4",
    ]
    for replica in replicas:
        env, token = replica.env, replica.launch.token
        assert env["CLIPYARD_INSTANCE_ID"] == replica.instance_id
        assert env["CLIPYARD_NATS_USER"] == token
        assert env["CLIPYARD_NATS_PASSWORD"] == f"pw-{token}"
        assert env["CLIPYARD_NATS_URL"] == ",".join(_settings(tmp_path).nats_urls)
        assert env["CLIPYARD_POSTGRES_DSN"].startswith(f"postgresql://clipyard_{token}:")
        assert (env["CLIPYARD_STORE"], env["CLIPYARD_EVENT_REPLICAS"]) == ("postgres", "3")
        if replica.home is None:
            assert env["CLIPYARD_HOME"] == str(tmp_path)
        assert ("CLIPYARD_ADMIN_KEY" in env) == (token == "gateway")
        assert ("CLIPYARD_SECRET_KEY" in env) == (token == "credentials")
        assert not [k for k in env if k.startswith("CLIPYARD_POSTGRES_DSN_")]
        assert "CLIPYARD_NATS_PASSWORD_CLI" not in env
    ports = {r.instance_id: r.env["CLIPYARD_HTTP_PORT"] for r in replicas}
    assert (ports["api-gateway-1"], ports["api-gateway-2"]) == ("7001", "7002")
    assert ports["heartbeat-controller-2"] == "7001"  # agents are sent to the first gateway
    assert [r.http_port for r in replicas if r.http_port] == [7001, 7002]


def test_each_node_includes_nats_conf_and_routes_log_in_from_the_environment(
    tmp_path: Path,
) -> None:
    config = tmp_path / "deploy" / "nats" / "nats.conf"
    config.parent.mkdir(parents=True)
    config.write_text("# users\n")
    home = tmp_path / "home"
    ports = ClusterPorts.from_bases(7000, 7100)
    cluster = NatsCluster(
        nats_nodes(ports, home),
        binary=Path("/bin/true"),
        config=config,
        passwords={user: f"pw-{user}" for user in (*SERVICES, "cli")},
        base_env={"PATH": "/usr/bin", "CLIPYARD_ADMIN_KEY": "no"},
        rotation=log_rotation({}),
    )
    node = cluster.node(2)
    (home / "nats").mkdir(parents=True)
    cluster._write_config(node)
    text = node.config_path.read_text()
    assert node.config_path.stat().st_mode & 0o777 == 0o600
    assert 'include "../../deploy/nats/nats.conf"' in text
    assert 'server_name: "nats-2"' in text
    assert 'listen: "127.0.0.1:7111"' in text
    assert "password: $CLIPYARD_NATS_ROUTE_PASSWORD" in text
    assert "routes: $CLIPYARD_NATS_ROUTES" in text
    env = cluster._node_env(node)
    password = json.loads(env["CLIPYARD_NATS_ROUTE_PASSWORD"])
    routes = json.loads(env["CLIPYARD_NATS_ROUTES"])
    assert routes == [f"nats://route:{password}@127.0.0.1:{p}" for p in (7110, 7112)]
    assert json.loads(env["CLIPYARD_NATS_STORE_DIR"]) == str(home / "nats" / "nats-2")
    assert json.loads(env["CLIPYARD_NATS_PASSWORD_GATEWAY"]) == "pw-gateway"
    assert "CLIPYARD_ADMIN_KEY" not in env
    with pytest.raises(KeyError):
        cluster.node(4)


def test_a_worker_node_runs_with_the_other_homes_hidden_under_the_same_pid(tmp_path: Path) -> None:
    argv = hidden_homes_argv(["python", "-m", "x"], [tmp_path / "a", tmp_path / "b"])
    assert argv[1:5] == ["--mount", "--propagation", "private", "/bin/sh"]  # no --fork
    assert argv[-6:] == [str(tmp_path / "a"), str(tmp_path / "b"), "--", "python", "-m", "x"]
    assert hidden_homes_argv(["python"], []) == ["python"]


def test_the_second_node_id_is_refused_as_the_first() -> None:
    with pytest.raises(ValueError, match="nodeb"):
        worker_nodes(Path("/h"), {"CLIPYARD_NODE_ID": "nodeb"})
