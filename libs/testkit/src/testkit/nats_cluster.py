"""A real three-node nats-server cluster with JetStream on loopback, for replicated streams.

Each node is the venv's ``nats-server`` (:func:`testkit.nats_server.nats_server_binary`) with its
own client, route and monitoring port, its own store folder under one temporary folder,
``--server_name n<i>``, one ``--cluster_name`` and routes to every other node. The nodes start
at once; the cluster is ready when every running node's ``/healthz`` answers 200 and the
JetStream meta group has a leader that sees every other node as current (``/jsz``), so a stream
can be created at R3 right away. Nodes can be stopped (SIGTERM, or SIGKILL) and started again,
one or several at once, on the same ports and stores, as the nodes of a real cluster would be.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from testkit.nats_server import NatsServerError, nats_server_binary, spawn_server
from testkit.procutil import free_port, stop_process, tail

__all__ = ["ClusterNode", "NatsCluster", "start_nats_cluster"]


@dataclass
class ClusterNode:
    """One node of a :class:`NatsCluster`: its ports, store, log and process."""

    index: int
    name: str
    port: int
    cluster_port: int
    monitor_port: int
    store_dir: Path
    log_path: Path
    args: list[str] = field(default_factory=list)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The client URL (``nats://127.0.0.1:<port>``)."""
        return f"nats://127.0.0.1:{self.port}"

    @property
    def monitor_url(self) -> str:
        """The HTTP monitoring URL (``/healthz``, ``/jsz``)."""
        return f"http://127.0.0.1:{self.monitor_port}"

    @property
    def running(self) -> bool:
        """True while the node's process runs."""
        return self.process is not None and self.process.poll() is None


def _get_json(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=0.5) as response:
            return int(response.status), json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, {}
    except (urllib.error.URLError, OSError, ValueError):
        return 0, {}


class NatsCluster:
    """A running cluster: ``urls`` (every node), ``url`` (the same, comma-joined), ``nodes``."""

    def __init__(self, name: str, nodes: list[ClusterNode], base_dir: Path, env: dict[str, str]):
        self.name = name
        self.nodes = nodes
        self._base_dir: Path | None = base_dir
        self._env = env
        self.ready_after = 0.0
        """Seconds from starting the nodes until the cluster was ready."""

    @property
    def urls(self) -> list[str]:
        """Every node's client URL, stopped nodes included (clients reconnect to them)."""
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        """The client URLs joined by commas (``CLIPYARD_NATS_URL`` of a clustered stack)."""
        return ",".join(self.urls)

    def healthy(self, index: int) -> bool:
        """True when node ``index`` runs and its ``/healthz`` answers 200 (JetStream current)."""
        node = self.nodes[index]
        return node.running and _get_json(f"{node.monitor_url}/healthz")[0] == 200

    def meta_leader(self) -> str | None:
        """The JetStream meta leader's server name, as a running node sees it when every other
        running node is a current peer of it; None while there is none."""
        running = [node for node in self.nodes if node.running]
        for node in running:
            status, jsz = _get_json(f"{node.monitor_url}/jsz")
            meta = jsz.get("meta_cluster") if status == 200 else None
            if not isinstance(meta, dict) or not meta.get("leader"):
                continue
            replicas = meta.get("replicas") or []
            current = {r.get("name") for r in replicas if isinstance(r, dict) and r.get("current")}
            others = {n.name for n in running if n.name != meta["leader"]}
            if others <= current:
                return str(meta["leader"])
        return None

    def logs(self, index: int) -> str:
        """Node ``index``'s log so far."""
        return tail(self.nodes[index].log_path, limit=1_000_000)

    def wait_ready(self, timeout: float = 20.0) -> float:
        """Wait until every running node is healthy and the meta group has a full leader.

        Returns:
            Seconds waited.

        Raises:
            NatsServerError: Not ready in time, or a node exited (the logs are in the message).
        """
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            running = [node.index for node in self.nodes if node.process is not None]
            dead = [i for i in running if not self.nodes[i].running]
            if dead:
                raise NatsServerError(self._failure(f"node {dead[0]} exited"))
            if all(self.healthy(i) for i in running) and self.meta_leader() is not None:
                return time.monotonic() - started
            time.sleep(0.02)
        raise NatsServerError(self._failure(f"not ready within {timeout:g} s"))

    def start_node(self, index: int, timeout: float = 20.0) -> float:
        """Start node ``index`` again (same ports and store) and wait until the cluster is ready.

        Returns:
            Seconds from the start until ready.
        """
        return self.start_nodes([index], timeout)

    def start_nodes(self, indexes: list[int], timeout: float = 20.0) -> float:
        """Start the stopped nodes of ``indexes`` at once (same ports and stores), as a restart
        of several servers would, and wait until the cluster is ready.

        Returns:
            Seconds from the start until ready (0 when every one of them was running).
        """
        stopped = [self.nodes[i] for i in indexes if not self.nodes[i].running]
        if not stopped:
            return 0.0
        for node in stopped:
            self._spawn(node)
        return self.wait_ready(timeout)

    def stop_node(self, index: int, sig: signal.Signals = signal.SIGTERM) -> None:
        """Stop node ``index`` (SIGTERM; SIGKILL for a crash); its store stays for a restart."""
        node = self.nodes[index]
        if node.process is not None:
            stop_process(node.process, sig=sig)
            node.process = None

    def stop(self) -> None:
        """Stop every node (all signalled at once) and remove the temporary folder."""
        for node in self.nodes:
            if node.running and node.process is not None:
                os.kill(node.process.pid, signal.SIGTERM)
        for index in range(len(self.nodes)):
            self.stop_node(index)
        if self._base_dir is not None:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None

    def _spawn(self, node: ClusterNode) -> None:
        node.process = spawn_server(node.args, self._env, node.log_path)

    def _failure(self, what: str) -> str:
        logs = "\n".join(f"--- {n.name}:\n{tail(n.log_path, limit=1500)}" for n in self.nodes)
        return f"NATS cluster {self.name}: {what}\n{logs}"


def _nodes(
    binary: Path, base: Path, name: str, size: int, config: Path | None
) -> list[ClusterNode]:
    nodes = [
        ClusterNode(
            index=i,
            name=f"n{i}",
            port=free_port(),
            cluster_port=free_port(),
            monitor_port=free_port(),
            store_dir=base / f"n{i}" / "jetstream",
            log_path=base / f"n{i}.log",
        )
        for i in range(size)
    ]
    for node in nodes:
        routes = [f"nats://127.0.0.1:{n.cluster_port}" for n in nodes if n is not node]
        node.args = [
            str(binary),
            *(["-c", str(config)] if config is not None else []),
            *("-a", "127.0.0.1", "-p", str(node.port), "-m", str(node.monitor_port)),
            *("-js", "-sd", str(node.store_dir), "--server_name", node.name),
            *("--cluster_name", name, "--cluster", f"nats://127.0.0.1:{node.cluster_port}"),
            *("--routes", ",".join(routes)),
        ]
    return nodes


def start_nats_cluster(
    size: int = 3,
    *,
    config_path: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 20.0,
) -> NatsCluster:
    """Start ``size`` clustered nats-servers with JetStream on 127.0.0.1 and wait until ready.

    Args:
        size: How many nodes (3 for R3 streams).
        config_path: An optional config file every node reads (users, permissions); the command
            line's listen, cluster and JetStream options override the same settings in it.
        env: Extra environment for the servers (merged over ``os.environ``).
        timeout: Seconds to wait for the cluster to be ready.

    Returns:
        The running cluster; call ``stop()`` when done.

    Raises:
        NatsServerError: The binary is missing or the cluster did not become ready.
    """
    binary = nats_server_binary()
    config = Path(config_path) if config_path is not None else None
    last_error: NatsServerError | None = None
    for _ in range(3):  # a port taken between probing and binding: try new ports
        base = Path(tempfile.mkdtemp(prefix="clipyard-nats-cluster-"))
        name = f"clipyard-{uuid.uuid4().hex[:8]}"
        nodes = _nodes(binary, base, name, size, config)
        cluster = NatsCluster(name, nodes, base, {**os.environ, **(env or {})})
        for node in cluster.nodes:
            cluster._spawn(node)
        try:
            cluster.ready_after = cluster.wait_ready(timeout)
        except NatsServerError as error:
            last_error = error
            cluster.stop()
            continue
        return cluster
    assert last_error is not None
    raise last_error
