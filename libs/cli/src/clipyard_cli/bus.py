"""How the CLI reaches the services: its NATS login, its principal, micro pings and stats (of
every instance: :func:`service_instances`).

The CLI connects as NATS user ``cli`` with the password ``clipyard up`` generated into
``$CLIPYARD_HOME/nats/passwords.json``, or, to an external NATS, the one in
``CLIPYARD_NATS_PASSWORD_CLI`` (without a user when that is unset: servers without
authorization; :mod:`clipyard_cli.natsmode`); ``CLIPYARD_NATS_URL`` (one server or a comma list),
``CLIPYARD_NATS_USER`` and ``CLIPYARD_NATS_PASSWORD`` override each part. Its replies arrive on the user's private inbox
(``_INBOX_cli.>``), the only one ``deploy/nats/nats.conf`` lets it read.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import msgspec
import nats.errors
from nats.aio.client import Client

from clipyard_cli.home import CLI_USER
from clipyard_cli.natsmode import nats_password, nats_urls
from contracts import subjects
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.service import READ_MODEL_HEALTH_ENDPOINT, ReadModelHealth, StopAllRuntimeServices
from natsbus.client import BusClient
from natsbus.connection import connect, inbox_prefix_for
from natsbus.instances import InstancePing, gather_answers
from natsbus.urls import DEFAULT_NATS_URL

__all__ = [
    "CLI_PRINCIPAL",
    "DEFAULT_NATS_URL",
    "BusLogin",
    "InstanceStatus",
    "Ping",
    "connect_cli",
    "login_from_env",
    "ping_service",
    "read_model_health",
    "service_instances",
    "stop_all_runtime",
]

CLI_PRINCIPAL: Final = Principal(company_id=None, actor=Actor(type="admin", id="clipyard-cli"))
"""The operator at the command line: the principal of every CLI request."""


@dataclass(frozen=True)
class BusLogin:
    """Where and as whom the CLI connects."""

    url: str
    user: str | None
    password: str | None = field(repr=False)

    @property
    def inbox_prefix(self) -> str:
        """The user's private reply inbox prefix (``_INBOX_cli``)."""
        return inbox_prefix_for(self.user)


def login_from_env(env: Mapping[str, str]) -> BusLogin:
    """The CLI's NATS login: the environment's overrides, else user ``cli`` with its password
    (:func:`clipyard_cli.natsmode.nats_password`).

    Args:
        env: The process environment.

    Returns:
        The login (without a user for an external NATS without authorization).

    Raises:
        HomeError: No password is given and ``passwords.json`` does not exist.
        ValueError: ``CLIPYARD_NATS_URL`` or ``CLIPYARD_NATS_EXTERNAL`` is unusable (the message
            names the entry and the fix).
    """
    servers = nats_urls(env)
    given_user = env.get("CLIPYARD_NATS_USER")
    user = given_user or CLI_USER
    password = nats_password(env, user, servers)
    return BusLogin(
        url=",".join(one.url for one in servers),
        user=user if password or given_user else None,
        password=password,
    )


async def connect_cli(login: BusLogin, *, initial_wait: float = 3.0) -> Client:
    """Connect to NATS as the CLI.

    Args:
        login: Where and as whom.
        initial_wait: Seconds to keep trying the first connection.

    Returns:
        A connected client.

    Raises:
        NatsConnectError: NATS did not accept the connection in time.
        ValueError: The user cannot name a reply inbox (``CLIPYARD_NATS_USER`` with a dot...).
    """
    return await connect(
        login.url,
        name="clipyard-cli",
        user=login.user,
        password=login.password,
        inbox_prefix=login.inbox_prefix,
        initial_wait=initial_wait,
    )


class Ping(msgspec.Struct, frozen=True):
    """A micro ping response (``io.nats.micro.v1.ping_response``) and how long it took."""

    name: str
    id: str
    version: str
    latency_ms: float = 0.0


async def ping_service(nc: Client, name: str, *, timeout: float = 2.0) -> Ping | None:
    """Ping one micro service by name (``$SRV.PING.<name>``).

    Args:
        nc: A connected client.
        name: The service name (``workspace-realizer``).
        timeout: Seconds to wait for an answer.

    Returns:
        The first instance's answer with its round-trip time, or ``None`` when none answers.
    """
    started = time.perf_counter()
    try:
        msg = await nc.request(f"$SRV.PING.{name}", b"", timeout=timeout)
    except (TimeoutError, nats.errors.NoRespondersError):
        return None
    latency_ms = (time.perf_counter() - started) * 1000.0
    try:
        ping = msgspec.json.decode(msg.data, type=Ping)
    except msgspec.DecodeError:
        return None
    return msgspec.structs.replace(ping, latency_ms=round(latency_ms, 2))


class _EndpointStats(msgspec.Struct, frozen=True):
    """One endpoint of a micro stats response (``io.nats.micro.v1.stats_response``)."""

    name: str
    data: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b"null"))
    """Left undecoded: only the read-model endpoint's is read (others may hold anything)."""


class _Stats(msgspec.Struct, frozen=True):
    id: str = ""
    endpoints: list[_EndpointStats] = msgspec.field(default_factory=list)


def _health_of(data: bytes) -> ReadModelHealth | None:
    """The :class:`~contracts.service.ReadModelHealth` a stats answer carries, if any."""
    try:
        stats = msgspec.json.decode(data, type=_Stats)
        for endpoint in stats.endpoints:
            if endpoint.name == READ_MODEL_HEALTH_ENDPOINT:
                return msgspec.json.decode(endpoint.data, type=ReadModelHealth | None)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return None


async def read_model_health(
    nc: Client, name: str, *, timeout: float = 2.0, micro_id: str | None = None
) -> ReadModelHealth | None:
    """Ask one micro service how its read models stand (``$SRV.STATS.<name>``, or
    ``$SRV.STATS.<name>.<micro_id>`` for one instance).

    Args:
        nc: A connected client.
        name: The service name (``workspace-realizer``).
        timeout: Seconds to wait for an answer.
        micro_id: The micro id of the instance to ask (default: any).

    Returns:
        The first instance's :class:`~contracts.service.ReadModelHealth`, or ``None`` when none
        answers or the answer does not carry it (a service of an older version).
    """
    try:
        subject = f"$SRV.STATS.{name}" if micro_id is None else f"$SRV.STATS.{name}.{micro_id}"
        msg = await nc.request(subject, b"", timeout=timeout)
    except (TimeoutError, nats.errors.NoRespondersError):
        return None
    return _health_of(msg.data)


@dataclass(frozen=True)
class InstanceStatus:
    """One live instance of a service as ``clipyard status`` shows it."""

    service: str
    instance: str
    """Its instance id (``CLIPYARD_INSTANCE_ID``; its micro id when it names none)."""
    node: str
    """Its node (``CLIPYARD_NODE_ID``), ``-`` when it names none."""
    id: str
    """Its micro id."""
    version: str
    latency_ms: float
    """How long its ping answer took."""
    health: ReadModelHealth | None = None
    """Its read models and its part in the service's lease (``None``: it did not tell)."""

    @property
    def role(self) -> str:
        """``leader``, ``standby``, or ``-`` when it did not tell."""
        return (self.health.role if self.health else "") or "-"


async def service_instances(
    nc: Client, name: str, *, wait: float = 0.5, timeout: float = 1.0
) -> list[InstanceStatus]:
    """Every instance of service ``name`` that answers its ping within ``wait`` seconds, with
    what its ``$SRV.STATS`` answer says (gathered at the same time; an instance whose stats came
    late is asked again on its own subject, ``$SRV.STATS.<name>.<micro id>``, for ``timeout``).

    Returns:
        One per instance, ordered by instance id (empty when none answers).
    """
    pings, stats = await asyncio.gather(
        gather_answers(nc, f"$SRV.PING.{name}", wait=wait),
        gather_answers(nc, f"$SRV.STATS.{name}", wait=wait),
    )
    healths: dict[str, ReadModelHealth | None] = {}
    for answer in stats:
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            healths[msgspec.json.decode(answer.data, type=_Stats).id] = _health_of(answer.data)
    found: dict[str, tuple[InstancePing, float]] = {}
    for answer in pings:
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
            ping = msgspec.json.decode(answer.data, type=InstancePing)
            found.setdefault(ping.id, (ping, answer.latency_ms))
    late = [micro_id for micro_id in found if micro_id not in healths]
    asked = await asyncio.gather(
        *(read_model_health(nc, name, timeout=timeout, micro_id=one) for one in late)
    )
    healths.update(zip(late, asked, strict=True))
    rows = [
        InstanceStatus(
            service=name,
            instance=ping.instance,
            node=ping.metadata.get("node") or "-",
            id=ping.id,
            version=ping.version,
            latency_ms=latency_ms,
            health=healths.get(ping.id),
        )
        for ping, latency_ms in found.values()
    ]
    return sorted(rows, key=lambda row: row.instance)


async def stop_all_runtime(nc: Client, node: str, *, timeout: float) -> str:
    """Ask the runtime-supervisor of ``node`` to stop every runtime service and slot
    (``ws.cmd.runtime_service.stop_all.<node>``).

    Returns:
        What came of it, in one line.
    """
    reply = await BusClient(nc).request(
        subjects.command("runtime_service", "stop_all", node),
        StopAllRuntimeServices(principal=CLI_PRINCIPAL, node=node),
        timeout=timeout,
    )
    match reply:
        case Ok(result=dict() as result):
            return (
                f"runtime services stopped: {result.get('servicesStopped', 0)}, "
                f"slots stopped: {result.get('slotsStopped', 0)}"
            )
        case ErrorReply(code="service_unavailable"):
            return f"no runtime-supervisor answers stop-all on node {node} yet"
        case ErrorReply(code=code, message=message):
            return f"stop-all on node {node} failed ({code}): {message}"
        case _:
            return f"stop-all on node {node}: {reply!r}"
