"""How the CLI reaches the services: its NATS login, its principal, micro pings and stats.

The CLI connects as NATS user ``cli`` with the password ``clipyard up`` generated into
``$CLIPYARD_HOME/nats/passwords.json``, or, to an external NATS, the one in
``CLIPYARD_NATS_PASSWORD_CLI`` (without a user when that is unset: servers without
authorization; :mod:`clipyard_cli.natsmode`); ``CLIPYARD_NATS_URL`` (one server or a comma list),
``CLIPYARD_NATS_USER`` and ``CLIPYARD_NATS_PASSWORD`` override each part. Its replies arrive on the user's private inbox
(``_INBOX_cli.>``), the only one ``deploy/nats/nats.conf`` lets it read.
"""

from __future__ import annotations

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
from natsbus.urls import DEFAULT_NATS_URL

__all__ = [
    "CLI_PRINCIPAL",
    "DEFAULT_NATS_URL",
    "BusLogin",
    "Ping",
    "connect_cli",
    "login_from_env",
    "ping_service",
    "read_model_health",
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
    endpoints: list[_EndpointStats] = msgspec.field(default_factory=list)


async def read_model_health(
    nc: Client, name: str, *, timeout: float = 2.0
) -> ReadModelHealth | None:
    """Ask one micro service how its read models stand (``$SRV.STATS.<name>``).

    Args:
        nc: A connected client.
        name: The service name (``workspace-realizer``).
        timeout: Seconds to wait for an answer.

    Returns:
        The first instance's :class:`~contracts.service.ReadModelHealth`, or ``None`` when none
        answers or the answer does not carry it (a service of an older version).
    """
    try:
        msg = await nc.request(f"$SRV.STATS.{name}", b"", timeout=timeout)
    except (TimeoutError, nats.errors.NoRespondersError):
        return None
    try:
        stats = msgspec.json.decode(msg.data, type=_Stats)
        for endpoint in stats.endpoints:
            if endpoint.name == READ_MODEL_HEALTH_ENDPOINT:
                return msgspec.json.decode(endpoint.data, type=ReadModelHealth | None)
    except msgspec.DecodeError:
        return None
    return None


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
