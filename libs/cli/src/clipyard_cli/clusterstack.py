"""A replicated control plane on this one machine: :class:`ClusterStack`.

A three-node NATS cluster with JetStream and route authorization (:mod:`clipyard_cli.clusternats`),
one PostgreSQL with a role and schema per service (:mod:`clipyard_cli.clusterpg`), and the service
replicas of :mod:`clipyard_cli.clusterservices` (two of api-gateway, heartbeat-controller and
git-credentials; two company-wide workspace-realizers; and two worker nodes, each a
workspace-realizer host part and a runtime-supervisor, :mod:`clipyard_cli.clusternodes`), under
one ``home`` (logs in ``home/logs``) and the second node's ``<home>-nodeb``. ``clipyard cluster up`` runs one in the foreground; tests use it
as a fixture and take it apart on purpose::

    async with ClusterStack(tmp_path / "home", ports=ClusterPorts.free()) as cluster:
        cluster.kill("api-gateway", 1, signal.SIGKILL)        # a replica crashes
        await cluster.restart("api-gateway", 1)               # and comes back, answering
        await cluster.stop_nats_node(2, signal.SIGKILL)       # a NATS node crashes
        await cluster.start_nats_node(2)                      # and rejoins

Replicas and NATS nodes are numbered from 1 (``api-gateway-1`` is ``("api-gateway", 1)``);
services are named by service name or token (``"gateway"``). Nothing is restarted by itself: a
replica that dies stays dead until :meth:`ClusterStack.restart` or :meth:`ClusterStack.
start_replica`. The state is thrown away at every start (new PostgreSQL, emptied JetStream
stores); the NATS passwords (``nats/passwords.json``) and the admin key (``admin.key``) of the
home are kept. Every child gets a parent-death signal, so even a killed owner leaves nothing.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import secrets
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TextIO

from nats.aio.client import Client

from clipyard_cli.bus import BusLogin, connect_cli
from clipyard_cli.clusternats import NatsCluster, NatsNode, nats_nodes
from clipyard_cli.clusternodes import WorkerNode, stop_runtime, worker_nodes
from clipyard_cli.clusterpg import ClusterPostgres
from clipyard_cli.clusterprocs import ClusterPorts, all_or_none, stop_child
from clipyard_cli.clusterservices import (
    Replica,
    ReplicaSettings,
    build_replicas,
    live_instances,
    start_service,
)
from clipyard_cli.clusterservices import wait_replicas as _wait_replicas
from clipyard_cli.home import CLI_USER, ensure_admin_key, ensure_passwords
from clipyard_cli.runstate import RunLock
from clipyard_cli.stack import (
    ManagedProcess,
    StackError,
    find_nats_config,
    find_nats_server,
    resolve_service,
)
from contracts.subjects import SERVICE_NAMES, ServiceToken
from servicekit.keys import private_dir
from servicekit.settings import SettingsError, log_rotation

__all__ = ["ClusterStack"]


class ClusterStack:
    """NATS x3, PostgreSQL and the service replicas of one local cluster."""

    def __init__(
        self,
        home: Path,
        *,
        ports: ClusterPorts | None = None,
        env: Mapping[str, str] | None = None,
        out: TextIO | None = None,
        ready_timeout: float = 90.0,
    ) -> None:
        """Prepare (nothing starts before :meth:`start`).

        Args:
            home: ``CLIPYARD_HOME`` of every process (absolute; created if missing).
            ports: Where to listen (default :meth:`ClusterPorts.from_bases`: 8180-8181, 4322-...).
            env: The environment the children's derive from (default: this process's).
            out: Where progress lines go (default: stdout).
            ready_timeout: Seconds :meth:`start`, :meth:`restart` and the NATS node start wait.
        """
        self.home = home.expanduser().resolve()
        self.ports = ports or ClusterPorts.from_bases()
        self.env = dict(os.environ if env is None else env)
        self.out = sys.stdout if out is None else out
        self.ready_timeout = ready_timeout
        self.admin_key = ""
        self.nats_passwords: dict[str, str] = {}
        self.replicas: list[Replica] = []
        self.nodes: tuple[WorkerNode, ...] = ()
        """The worker nodes (:mod:`clipyard_cli.clusternodes`), once started."""
        self.nats: NatsCluster | None = None
        self.postgres = ClusterPostgres(self.home, self.env)
        self.nc: Client | None = None
        self._lock: RunLock | None = None
        self.ready_after = 0.0
        """Seconds :meth:`start` took."""

    @property
    def gateway_urls(self) -> list[str]:
        """Each gateway's root URL (``http://127.0.0.1:8180``; the API is below ``/api``)."""
        return [f"http://127.0.0.1:{port}" for port in self.ports.http]

    @property
    def nats_urls(self) -> list[str]:
        """Each NATS node's client URL, in node order."""
        return [f"nats://127.0.0.1:{port}" for port in self.ports.nats]

    @property
    def postgres_dsn(self) -> str:
        """The PostgreSQL superuser's DSN of database ``clipyard`` (password included)."""
        return self.postgres.dsn

    @property
    def postgres_dsns(self) -> dict[ServiceToken, str]:
        """The DSN each service connects with: its own role, password included."""
        return self.postgres.service_dsns

    async def __aenter__(self) -> ClusterStack:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start PostgreSQL and NATS (together), then every replica; return once each replica
        answers ``$SRV.PING`` under its instance id and both gateways answer health 200.

        Raises:
            StackError: Something did not start (what, and the end of its log, in the message);
                whatever had started is stopped again.
        """
        started = time.monotonic()
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise
        self.ready_after = time.monotonic() - started

    async def _start(self) -> None:
        self.ports.require_free()
        try:  # one stack per home: `clipyard up`'s lock (so `clipyard down` stops this one too)
            private_dir(self.home)  # 0700 when created here: logs, keys and passwords live in it
            self._lock = RunLock.acquire(self.home)
        except RuntimeError as exc:
            raise StackError(f"{self.home} is in use: {exc}") from None
        try:
            rotation = log_rotation(self.env)
        except SettingsError as exc:
            raise StackError(str(exc)) from None
        self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            self.nodes = worker_nodes(self.home, self.env)
        except ValueError as exc:
            raise StackError(str(exc)) from None
        for node in self.nodes:  # each hides the other's: both must exist first
            private_dir(node.home)
        self.nats_passwords = ensure_passwords(self.home)
        self.admin_key = ensure_admin_key(self.home, self.env)
        self.nats = NatsCluster(
            nats_nodes(self.ports, self.home),
            binary=find_nats_server(),
            config=find_nats_config(self.env),
            passwords=self.nats_passwords,
            base_env=self.env,
            rotation=rotation,
        )
        self.say("starting PostgreSQL and a NATS cluster of 3 nodes")
        await all_or_none(
            [self.postgres.start(self.ready_timeout), self.nats.start(self.ready_timeout)]
        )
        self.nc = await self.connect()
        secret_key = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii")
        settings = ReplicaSettings(
            home=self.home,
            nats_urls=tuple(self.nats_urls),
            passwords=self.nats_passwords,
            admin_key=self.admin_key,
            secret_key=secret_key,
            dsns=self.postgres_dsns,
            http_ports=self.ports.http,
            nodes=self.nodes,
        )
        self.replicas = build_replicas(self.env, settings)
        by_service: dict[str, list[Replica]] = {}
        for replica in self.replicas:
            by_service.setdefault(replica.service, []).append(replica)
        await all_or_none(
            [
                start_service(
                    self.nc, replicas, home=self.home, timeout=self.ready_timeout, say=self.say
                )
                for replicas in by_service.values()
            ]
        )
        await _wait_replicas(self.nc, self.replicas, timeout=self.ready_timeout)

    async def stop(self) -> None:
        """Stop everything: runtime services (the supervisor's stop-all, then a sweep), every
        replica (SIGTERM, SIGKILL after 5 s), the NATS nodes, PostgreSQL; then the home's lock
        goes. Safe to call twice."""
        await self._stop_runtime()
        running = [replica for replica in self.replicas if replica.process is not None]
        await asyncio.gather(*(self._stop_replica(replica) for replica in running))
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await self.nc.close()
            self.nc = None
        if self.nats is not None:
            await self.nats.stop()
        await self.postgres.stop()
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    async def _stop_runtime(self) -> None:
        if self.replicas:
            await stop_runtime(self.nc, self.replicas, self.nodes, self.say)

    def replica(self, service: str, index: int) -> Replica:
        """Replica ``index`` (1-based) of ``service`` (name or token).

        Raises:
            KeyError: No such replica (the message lists the service's replicas).
        """
        name = SERVICE_NAMES[resolve_service(service)]
        ours = [replica for replica in self.replicas if replica.service == name]
        for replica in ours:
            if replica.index == index:
                return replica
        raise KeyError(f"{name} has replicas {[r.index for r in ours]}, not {index}")

    def process(self, service: str, index: int) -> ManagedProcess:
        """The replica's current process (it may have exited: ``.alive()``).

        Raises:
            KeyError: No such replica, or it was stopped (:meth:`stop_replica`).
        """
        process = self.replica(service, index).process
        if process is None:
            raise KeyError(f"{service} {index} is stopped")
        return process

    def pid(self, service: str, index: int) -> int:
        """The pid of the replica's current process (also its process group and session)."""
        return self.process(service, index).pid

    def kill(self, service: str, index: int, sig: signal.Signals = signal.SIGKILL) -> None:
        """Send ``sig`` to the replica's process (SIGKILL, SIGSTOP, SIGCONT, SIGTERM...) and
        return at once; a killed replica stays dead until :meth:`restart` or
        :meth:`start_replica`."""
        process = self.process(service, index)
        with contextlib.suppress(ProcessLookupError):
            process.popen.send_signal(sig)

    async def stop_replica(
        self, service: str, index: int, sig: signal.Signals = signal.SIGTERM
    ) -> int | None:
        """Stop the replica and wait: ``sig`` to its process group (with SIGCONT, so a stopped
        one gets it), SIGKILL after 5 s. Returns its exit code (None: it was not running)."""
        return await self._stop_replica(self.replica(service, index), sig)

    async def start_replica(
        self, service: str, index: int, timeout: float | None = None
    ) -> ManagedProcess:
        """Start a stopped or dead replica again (same instance id, environment and port) and
        wait until it answers ``$SRV.PING`` (and a gateway ``/api/health`` 200).

        Raises:
            StackError: It is still running, exited, or did not answer in time.
        """
        replica = self.replica(service, index)
        if replica.process is not None and replica.process.alive():
            raise StackError(f"{replica.instance_id} is running (pid {replica.process.pid})")
        if replica.process is not None:
            await asyncio.to_thread(replica.process.popen.wait)
        process = replica.spawn(self.home)
        assert self.nc is not None, "the stack is not started"
        await _wait_replicas(self.nc, [replica], timeout=timeout or self.ready_timeout)
        return process

    async def restart(
        self, service: str, index: int, timeout: float | None = None
    ) -> ManagedProcess:
        """:meth:`stop_replica` (if it runs), then :meth:`start_replica`; the new process."""
        await self.stop_replica(service, index)
        return await self.start_replica(service, index, timeout)

    async def live_instances(self, service: str) -> set[str]:
        """The instance ids of ``service`` answering ``$SRV.PING`` now."""
        assert self.nc is not None, "the stack is not started"
        return await live_instances(self.nc, SERVICE_NAMES[resolve_service(service)])

    async def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until every replica that has a process answers again (after NATS trouble)."""
        assert self.nc is not None, "the stack is not started"
        running = [replica for replica in self.replicas if replica.process is not None]
        await _wait_replicas(self.nc, running, timeout=timeout or self.ready_timeout)

    async def _stop_replica(
        self, replica: Replica, sig: signal.Signals = signal.SIGTERM
    ) -> int | None:
        process, replica.process = replica.process, None
        if process is None:
            return None
        return await asyncio.to_thread(stop_child, process, sig)

    def nats_node(self, index: int) -> NatsNode:
        """NATS node ``index`` (1-based): ``.name``, ``.url``, ``.port``, ``.process``."""
        assert self.nats is not None, "the stack is not started"
        return self.nats.node(index)

    async def stop_nats_node(self, index: int, sig: signal.Signals = signal.SIGTERM) -> None:
        """Stop node ``index`` and wait for its exit (SIGKILL: a crash); its store is kept."""
        assert self.nats is not None, "the stack is not started"
        await self.nats.stop_node(index, sig)

    async def start_nats_node(self, index: int, timeout: float | None = None) -> None:
        """Start a stopped node again and wait until the cluster is whole (every running node
        healthy, a JetStream meta leader seeing all of them current)."""
        assert self.nats is not None, "the stack is not started"
        await self.nats.start_node(index, timeout or self.ready_timeout)

    async def connect(self, user: str = CLI_USER) -> Client:
        """A new NATS connection to the cluster as ``user`` (default ``cli``); close it yourself."""
        login = BusLogin(
            url=",".join(self.nats_urls), user=user, password=self.nats_passwords[user]
        )
        return await connect_cli(login, initial_wait=10.0)

    def say(self, text: str) -> None:
        """Print one progress line (``clipyard cluster: ...``)."""
        print(f"clipyard cluster: {text}", file=self.out, flush=True)
