"""The service replicas of ``clipyard cluster up``: how many of each, their environments, their start
and how to tell they answer.

Two replicas of api-gateway, heartbeat-controller and git-credentials; four workspace-realizers:
``-2`` and ``-3`` serve the company-wide part (``company``: projects, project workspaces, issues),
``-1`` and ``-4`` the host part (``CLIPYARD_REALIZER_PART=host``) of the two worker nodes; two
runtime-supervisors, one per worker node (``-1`` on the first, ``-2`` on ``nodeb``;
:mod:`clipyard_cli.clusternodes`: their node id, home, port range and hidden homes). Each replica
is ``python -m <module>``, like ``clipyard up`` starts a service, with
:func:`clipyard_cli.stack.service_env`'s environment (its own NATS user and password, its own
PostgreSQL role's DSN, the admin key for gateways only, the vault key for git-credentials only)
plus: ``CLIPYARD_INSTANCE_ID=<service>-<i>``, ``CLIPYARD_STORE=postgres``,
``CLIPYARD_EVENT_REPLICAS=3``, the three NATS URLs in ``CLIPYARD_NATS_URL``, and for gateway ``i``
its own ``CLIPYARD_HTTP_PORT``. Every other service is given the first gateway's address
(``CLIPYARD_HTTP_HOST``/``_PORT``: what agents are told as ``CLIPYARD_API_URL``). Replica ``i``
logs to ``logs/<service>-<i>.log``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import nats.errors
from nats.aio.client import Client

from clipyard_cli.clusternodes import HOST_REPLICAS, WorkerNode, hidden_homes_argv
from clipyard_cli.clusterprocs import spawn_child
from clipyard_cli.probes import http_get
from clipyard_cli.stack import (
    SERVICE_LAUNCHES,
    ManagedProcess,
    ServiceLaunch,
    StackError,
    service_env,
)
from contracts.subjects import ServiceToken
from natsbus.instances import ping_instances

__all__ = [
    "HOST_BOUND",
    "REALIZER_PARTS",
    "REPLICAS",
    "Replica",
    "ReplicaSettings",
    "build_replicas",
    "gateway_healthy",
    "live_instances",
    "start_service",
    "wait_replicas",
]

REALIZER_PARTS: Final = ("host", "company", "company", "host")
"""``CLIPYARD_REALIZER_PART`` of workspace-realizer ``i`` (``[i - 1]``): the first node's host
part first (it is started alone, and creates the store's tables), the company-wide part's
replicas, then the second node's host part."""
REPLICAS: Final[Mapping[ServiceToken, int]] = {
    "gateway": 2,
    "controller": 2,
    "credentials": 2,
    "realizer": len(REALIZER_PARTS),
    "supervisor": 2,
}
"""Replicas per service token."""
HOST_BOUND: Final = ("the workspace-realizer's host part", "runtime-supervisor")
"""What runs once per worker node: it owns that host's worktrees and processes (its node
token, :mod:`clipyard_cli.clusternodes`)."""
_DROPPED: Final = ("CLIPYARD_POSTGRES_DSN", "CLIPYARD_INSTANCE_ID", "CLIPYARD_API_URL")
"""Settings of the caller's environment the cluster sets itself (prefixes)."""


@dataclass
class Replica:
    """One instance of one service: how it starts, and its current process."""

    launch: ServiceLaunch
    index: int
    """1-based, as in its instance id."""
    env: dict[str, str] = field(repr=False)
    process: ManagedProcess | None = None
    home: Path | None = None
    """Its worker node's home (its logs are there; None: the stack's home)."""
    hidden: tuple[Path, ...] = ()
    """The other worker nodes' homes, hidden from it (:func:`hidden_homes_argv`)."""

    @property
    def service(self) -> str:
        """The service name (``api-gateway``)."""
        return self.launch.name

    @property
    def instance_id(self) -> str:
        """``CLIPYARD_INSTANCE_ID`` (``api-gateway-2``): also its process and log name."""
        return f"{self.launch.name}-{self.index}"

    @property
    def http_port(self) -> int | None:
        """A gateway's HTTP port (None for the other services)."""
        return int(self.env["CLIPYARD_HTTP_PORT"]) if self.launch.token == "gateway" else None

    def spawn(self, home: Path) -> ManagedProcess:
        """Start ``python -m <module>`` with the replica's environment (a new process each
        call); a worker node's replica in its node's home, the other nodes' homes hidden."""
        argv = hidden_homes_argv([sys.executable, "-m", self.launch.module], self.hidden)
        own = self.home or home
        self.process = spawn_child(self.instance_id, argv, self.env, own, cwd=own)
        return self.process


@dataclass(frozen=True, kw_only=True)
class ReplicaSettings:
    """What every replica's environment is made of."""

    home: Path
    nats_urls: tuple[str, ...]
    passwords: Mapping[str, str] = field(repr=False)
    """NATS user -> password."""
    admin_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    """git-credentials' vault key (``CLIPYARD_SECRET_KEY``), the same for both replicas."""
    dsns: Mapping[ServiceToken, str] = field(repr=False)
    """Each service's own PostgreSQL DSN."""
    http_ports: tuple[int, ...]
    event_replicas: int = 3
    nodes: tuple[WorkerNode, ...] = ()
    """The worker nodes (:func:`clipyard_cli.clusternodes.worker_nodes`); none: every
    host-bound replica on the stack's home and node."""


def build_replicas(base: Mapping[str, str], settings: ReplicaSettings) -> list[Replica]:
    """Every replica of the cluster, in ``clipyard up``'s start order (gateways last).

    Raises:
        ValueError: ``settings.http_ports`` has fewer ports than gateway replicas.
    """
    common = {k: v for k, v in base.items() if not k.startswith(_DROPPED)}
    common.update(
        CLIPYARD_STORE="postgres",
        CLIPYARD_EVENT_REPLICAS=str(settings.event_replicas),
        CLIPYARD_SECRET_KEY=settings.secret_key,
        CLIPYARD_HTTP_HOST="127.0.0.1",
        CLIPYARD_HTTP_PORT=str(settings.http_ports[0]),
    )
    common.pop("CLIPYARD_SECRET_KEY_PREVIOUS", None)
    for token, dsn in settings.dsns.items():
        common[f"CLIPYARD_POSTGRES_DSN_{token.upper()}"] = dsn
    if len(settings.http_ports) < REPLICAS["gateway"]:
        raise ValueError(f"{REPLICAS['gateway']} gateways need as many HTTP ports")
    replicas = []
    for launch in SERVICE_LAUNCHES:
        env = service_env(
            common,
            launch,
            home=settings.home,
            nats_url=",".join(settings.nats_urls),
            password=settings.passwords[launch.token],
            admin_key=settings.admin_key,
        )
        for index in range(1, REPLICAS[launch.token] + 1):
            own = dict(env, CLIPYARD_INSTANCE_ID=f"{launch.name}-{index}")
            if launch.token == "gateway":
                own["CLIPYARD_HTTP_PORT"] = str(settings.http_ports[index - 1])
            if launch.token == "realizer":
                own["CLIPYARD_REALIZER_PART"] = REALIZER_PARTS[index - 1]
            replica = Replica(launch=launch, index=index, env=own)
            node = HOST_REPLICAS.get((launch.token, index))
            if node is not None and node < len(settings.nodes):
                worker = settings.nodes[node]
                replica.env = worker.env(own)
                replica.home = worker.home
                replica.hidden = tuple(n.home for n in settings.nodes if n is not worker)
            replicas.append(replica)
    return replicas


async def live_instances(nc: Client, service: str, *, wait: float = 0.3) -> set[str]:
    """The instance ids of ``service`` that answer ``$SRV.PING`` within ``wait`` seconds."""
    try:
        return {ping.instance for ping in await ping_instances(nc, service, wait=wait)}
    except nats.errors.Error:
        return set()


async def start_service(
    nc: Client,
    replicas: list[Replica],
    *,
    home: Path,
    timeout: float,
    say: Callable[[str], None],
) -> None:
    """Start one service's replicas: the first alone, the others once it answers ``$SRV.PING``.

    The first creates the service's tables: replicas starting together on an empty schema race
    in the event store's ``CREATE TYPE``, and one of them exits.
    """
    first, *others = replicas
    for wave in ([first], others):
        for replica in wave:
            replica.spawn(home)
            say(f"started {replica.instance_id}")
        if wave:
            await wait_replicas(nc, wave, timeout=timeout, health=False)


async def gateway_healthy(port: int) -> tuple[bool, str]:
    """Whether the gateway on ``port`` answers ``GET /api/health`` 200, and its last answer."""
    status, body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/api/health")
    return status == 200, f"{status} {body[:300]}"


async def wait_replicas(
    nc: Client, replicas: list[Replica], *, timeout: float, health: bool = True
) -> None:
    """Wait until each replica answers ``$SRV.PING`` under its instance id, and (``health``)
    each gateway among them answers ``GET /api/health`` 200.

    Raises:
        StackError: One exited, or not everything answered within ``timeout`` seconds (which
            ones, and the end of their logs, in the message).
    """
    deadline = time.monotonic() + timeout
    waiting = {replica.instance_id: replica for replica in replicas}
    unhealthy: dict[str, str] = {}
    while waiting or unhealthy:
        for replica in list(waiting.values()):
            _check_alive(replica)
        services = {replica.service for replica in waiting.values()}
        answers = await asyncio.gather(*(live_instances(nc, name) for name in services))
        live = set().union(*answers)
        for instance in live & waiting.keys():
            replica = waiting.pop(instance)
            if health and replica.http_port is not None:
                unhealthy[instance] = "not asked yet"
        for instance in list(unhealthy):
            port = next(r.http_port for r in replicas if r.instance_id == instance)
            assert port is not None
            healthy, unhealthy[instance] = await gateway_healthy(port)
            if healthy:
                del unhealthy[instance]
        if (waiting or unhealthy) and time.monotonic() > deadline:
            raise StackError(_not_ready(replicas, waiting, unhealthy))
        await asyncio.sleep(0.1 if waiting or unhealthy else 0)


def _check_alive(replica: Replica) -> None:
    process = replica.process
    if process is not None and not process.alive():
        raise StackError(
            f"{replica.instance_id} exited with code {process.popen.returncode} while starting; "
            f"its log ({process.log_path}) ends with:\n{process.log_tail()}"
        )


def _not_ready(
    replicas: list[Replica], waiting: Mapping[str, Replica], unhealthy: dict[str, str]
) -> str:
    lines = []
    if waiting:
        lines.append(f"no $SRV.PING answer from {', '.join(waiting)}")
    lines += [f"{name}: GET /api/health answered {last}" for name, last in unhealthy.items()]
    for replica in replicas:
        late = replica.instance_id in waiting or replica.instance_id in unhealthy
        if late and replica.process is not None:
            lines.append(f"--- {replica.process.log_path}\n{replica.process.log_tail()}")
    return "\n".join(lines)
