"""How the CLI reaches the services: its NATS login, its principal, micro pings and stats.

The CLI connects as NATS user ``cli`` with the password ``clipyard up`` generated into
``$CLIPYARD_HOME/nats/passwords.json``; ``CLIPYARD_NATS_URL``, ``CLIPYARD_NATS_USER`` and
``CLIPYARD_NATS_PASSWORD`` override each part. Its replies arrive on the user's private inbox
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

from clipyard_cli.home import CLI_USER, load_passwords, resolve_home
from contracts.base import Actor, Principal
from contracts.service import READ_MODEL_HEALTH_ENDPOINT, ReadModelHealth
from natsbus.connection import connect, inbox_prefix_for

__all__ = [
    "CLI_PRINCIPAL",
    "DEFAULT_NATS_URL",
    "BusLogin",
    "Ping",
    "connect_cli",
    "login_from_env",
    "ping_service",
    "read_model_health",
]

DEFAULT_NATS_URL: Final = "nats://127.0.0.1:4222"

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
    """The CLI's NATS login: the environment's overrides, else user ``cli`` from the home.

    Args:
        env: The process environment.

    Returns:
        The login.

    Raises:
        HomeError: No password is given and ``passwords.json`` does not exist.
    """
    url = env.get("CLIPYARD_NATS_URL") or DEFAULT_NATS_URL
    user = env.get("CLIPYARD_NATS_USER") or CLI_USER
    password = env.get("CLIPYARD_NATS_PASSWORD")
    if not password:
        password = load_passwords(resolve_home(env)).get(user)
    return BusLogin(url=url, user=user, password=password)


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
