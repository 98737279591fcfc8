"""The three-node NATS cluster of ``clipyard cluster up``: the venv's nats-server on loopback.

Each node runs ``nats-server -c $CLIPYARD_HOME/nats/nats-<i>.conf -a 127.0.0.1 -p <client port>
-m <monitoring port>``. Its configuration (rewritten at every start, 0600) includes the same
``deploy/nats/nats.conf`` as ``clipyard up`` (JetStream and the per-service users and
permissions), names the server ``nats-<i>``, logs to ``logs/nats-<i>.log`` (rotated by NATS, as
:mod:`clipyard_cli.natsconf` does for ``clipyard up``) and adds a ``cluster`` block in the manner
of ``deploy/nats/cluster.conf``: routes listen on loopback and must log in as user ``route``
with a password generated per start. The password and the route URLs carrying it come from the
node's environment (``CLIPYARD_NATS_ROUTE_PASSWORD``, ``CLIPYARD_NATS_ROUTES``), never from its
command line, which every user of the host can read. The cluster block is written out rather
than taken from ``cluster.conf`` (which listens on ``0.0.0.0:6222``), and the route listener
is not given with ``--cluster``: that flag drops a configuration's route authorization.

JetStream keeps each node's store in ``nats/nats-<i>/jetstream``, emptied at every start (the
stack's PostgreSQL is new at every start, and a relay refuses a stream that holds events its
store has never seen). The cluster is ready when every running node's ``/healthz`` answers 200
and the JetStream meta group has a leader that sees every other running node as current.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from clipyard_cli.clusterprocs import ClusterPorts, spawn_child, stop_child
from clipyard_cli.home import generate_secret, logs_dir, nats_dir
from clipyard_cli.stack import ManagedProcess, StackError, nats_server_env
from servicekit.settings import Rotation

__all__ = ["CLUSTER_NAME", "NatsCluster", "NatsNode", "meta_leader", "nats_nodes"]

CLUSTER_NAME: Final = "clipyard-local"
ROUTE_USER: Final = "route"


@dataclass
class NatsNode:
    """One node: its name (``nats-1``), ports, store and configuration, and its process."""

    index: int
    """1, 2 or 3."""
    port: int
    route_port: int
    monitor_port: int
    home: Path
    process: ManagedProcess | None = None

    @property
    def name(self) -> str:
        """The server and process name (``nats-1``)."""
        return f"nats-{self.index}"

    @property
    def url(self) -> str:
        """The client URL (``nats://127.0.0.1:<port>``)."""
        return f"nats://127.0.0.1:{self.port}"

    @property
    def monitor_url(self) -> str:
        """The monitoring root (``/healthz``, ``/jsz``)."""
        return f"http://127.0.0.1:{self.monitor_port}"

    @property
    def folder(self) -> Path:
        """``nats/nats-<i>``: the node's JetStream store lives in ``jetstream`` below it."""
        return nats_dir(self.home) / self.name

    @property
    def config_path(self) -> Path:
        """``nats/nats-<i>.conf``."""
        return nats_dir(self.home) / f"{self.name}.conf"

    @property
    def running(self) -> bool:
        """Whether its process runs."""
        return self.process is not None and self.process.alive()


def nats_nodes(ports: ClusterPorts, home: Path) -> list[NatsNode]:
    """The nodes listening on ``ports`` (node ``i`` on the ``i``-th client, route and monitoring
    port), their files under ``home``."""
    listens = zip(ports.nats, ports.routes, ports.monitors, strict=True)
    return [
        NatsNode(index=i, port=port, route_port=route, monitor_port=monitor, home=home)
        for i, (port, route, monitor) in enumerate(listens, start=1)
    ]


class NatsCluster:
    """Three clustered nats-servers with JetStream and route authorization."""

    def __init__(
        self,
        nodes: list[NatsNode],
        *,
        binary: Path,
        config: Path,
        passwords: Mapping[str, str],
        base_env: Mapping[str, str],
        rotation: Rotation,
    ) -> None:
        """Prepare (nothing starts before :meth:`start`).

        Args:
            nodes: The nodes (their ports; :class:`NatsNode`).
            binary: The venv's nats-server (:func:`clipyard_cli.stack.find_nats_server`).
            config: ``deploy/nats/nats.conf`` (the users and permissions every node includes).
            passwords: Every NATS user's password.
            base_env: The caller's environment (secrets are removed from what the nodes get).
            rotation: How the nodes' logs rotate.
        """
        self.nodes = nodes
        self._binary = binary
        self._config = config
        self._passwords = dict(passwords)
        self._base_env = dict(base_env)
        self._rotation = rotation
        self._route_password = generate_secret("rt")

    @property
    def urls(self) -> list[str]:
        """Every node's client URL, stopped ones included (clients reconnect to them)."""
        return [node.url for node in self.nodes]

    def node(self, index: int) -> NatsNode:
        """Node ``index`` (1-based).

        Raises:
            KeyError: No such node.
        """
        for node in self.nodes:
            if node.index == index:
                return node
        raise KeyError(f"no NATS node {index}; the nodes are 1 to {len(self.nodes)}")

    async def start(self, timeout: float) -> None:
        """Empty the stores, write the configurations, start every node and wait until ready.

        Raises:
            StackError: A node exited, or the cluster was not ready in time (logs in the message).
        """
        for node in self.nodes:
            shutil.rmtree(node.folder, ignore_errors=True)
            node.folder.mkdir(parents=True, mode=0o700)
            self._write_config(node)
        for node in self.nodes:
            self._spawn(node)
        await self.wait_ready(timeout)

    async def start_node(self, index: int, timeout: float) -> None:
        """Start a stopped node again (same ports, configuration and store); wait until ready."""
        node = self.node(index)
        if not node.running:
            self._spawn(node)
        await self.wait_ready(timeout)

    async def stop_node(self, index: int, sig: signal.Signals = signal.SIGTERM) -> None:
        """Stop one node: ``sig`` (SIGTERM: a clean stop; SIGKILL: a crash), SIGKILL after 5 s.

        Its store is kept, so :meth:`start_node` brings it back with its data.
        """
        node = self.node(index)
        process, node.process = node.process, None
        if process is not None:
            await asyncio.to_thread(stop_child, process, sig)

    async def stop(self) -> None:
        """Stop every node (all at once)."""
        await asyncio.gather(*(self.stop_node(node.index) for node in self.nodes))

    async def wait_ready(self, timeout: float) -> None:
        """Wait until every running node is healthy and the meta group has a full leader.

        Raises:
            StackError: A started node exited, or not ready within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            started = [node for node in self.nodes if node.process is not None]
            dead = [node for node in started if not node.running]
            if dead:
                raise StackError(self._failure(f"{dead[0].name} exited"))
            if await asyncio.to_thread(self._ready, started):
                return
            if time.monotonic() > deadline:
                raise StackError(self._failure(f"not ready within {timeout:g} s"))
            await asyncio.sleep(0.05)

    def _ready(self, running: list[NatsNode]) -> bool:
        if not all(_get_json(f"{node.monitor_url}/healthz")[0] == 200 for node in running):
            return False
        return meta_leader(running) is not None

    def _spawn(self, node: NatsNode) -> None:
        argv = [str(self._binary), "-c", str(node.config_path), "-a", "127.0.0.1"]
        argv += ["-p", str(node.port), "-m", str(node.monitor_port)]
        node.process = spawn_child(node.name, argv, self._node_env(node), node.home)

    def _node_env(self, node: NatsNode) -> dict[str, str]:
        """``nats.conf``'s variables (store, users' passwords) and the routes' login."""
        env = nats_server_env(self._base_env, node.home, self._passwords)
        env["CLIPYARD_NATS_STORE_DIR"] = json.dumps(str(node.folder))
        env["CLIPYARD_NATS_ROUTE_PASSWORD"] = json.dumps(self._route_password)
        login = f"{ROUTE_USER}:{self._route_password}"
        routes = [f"nats://{login}@127.0.0.1:{n.route_port}" for n in self.nodes if n is not node]
        env["CLIPYARD_NATS_ROUTES"] = json.dumps(routes)
        return env

    def _write_config(self, node: NatsNode) -> None:
        path = node.config_path
        include = os.path.relpath(self._config.resolve(), path.parent.resolve())
        text = "\n".join(
            [
                "# Written by `clipyard cluster up` at every start: do not edit "
                "(clipyard_cli/clusternats.py).",
                f"include {json.dumps(include)}",
                f"server_name: {json.dumps(node.name)}",
                f"log_file: {json.dumps(str(logs_dir(node.home) / f'{node.name}.log'))}",
                f"logfile_size_limit: {self._rotation.max_bytes}",
                f"logfile_max_num: {self._rotation.backups + 1}",
                "cluster {",
                f"  name: {json.dumps(CLUSTER_NAME)}",
                f'  listen: "127.0.0.1:{node.route_port}"',
                "  authorization {",
                f"    user: {ROUTE_USER}",
                "    password: $CLIPYARD_NATS_ROUTE_PASSWORD",
                "  }",
                "  routes: $CLIPYARD_NATS_ROUTES",
                "}",
                "",
            ]
        )
        logs_dir(node.home).mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)

    def _failure(self, what: str) -> str:
        tails = "\n".join(
            f"--- {node.name} ({node.process.log_path}):\n{node.process.log_tail()}"
            for node in self.nodes
            if node.process is not None
        )
        return f"the NATS cluster: {what}\n{tails}"


def meta_leader(running: list[NatsNode]) -> str | None:
    """The JetStream meta leader's name, as a running node sees it when every other running node
    is a current peer of it; None while there is none."""
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


def _get_json(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=0.5) as response:
            data = json.load(response)
            return int(response.status), data if isinstance(data, dict) else {}
    except urllib.error.HTTPError as error:
        return error.code, {}
    except (OSError, ValueError):
        return 0, {}
