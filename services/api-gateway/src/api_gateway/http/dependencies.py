"""What handlers depend on: the bus port, the gateway context, the authenticated principal.

The bus port (:class:`Bus`) is the one seam between HTTP and NATS: the real one wraps the NATS
connection (``api_gateway.adapters.bus``); tests hand ``create_app`` a fake.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

from api_gateway.http.shared_check import SharedCheck
from contracts.base import Accepted, Actor, ErrorReply, Ok, Principal, Query
from eventstore import Cause, acting

if TYPE_CHECKING:
    from api_gateway.application import GatewayApplication
    from api_gateway.settings import GatewaySettings
    from eventstore import StoreExecutor

__all__ = [
    "ADMIN",
    "Bus",
    "Gateway",
    "Ping",
    "StreamedEvent",
    "dependencies",
    "provide_gateway",
    "provide_principal",
]

T = TypeVar("T")

ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="admin"))
"""The principal of the admin key."""


@dataclass(frozen=True)
class StreamedEvent:
    """One message of the ``WS_EVENTS`` stream."""

    sequence: int
    subject: str
    data: bytes


@dataclass(frozen=True)
class Ping:
    """A service's answer to ``$SRV.PING.<name>``."""

    version: str | None
    latency_ms: float


class Bus(Protocol):
    """The gateway's view of NATS: requests, pings, the event stream."""

    @property
    def connected(self) -> bool:
        """Whether the NATS connection is up."""
        ...

    async def request(
        self, subject: str, message: Query | Any, *, timeout: float
    ) -> Ok | ErrorReply | Accepted:
        """Send a request; every remote failure comes back as an ``error`` reply (never raises)."""
        ...

    async def ping(self, service_name: str, *, timeout: float) -> Ping:
        """Ping a micro service by name; raises ``TimeoutError`` (or a NATS error) if it is down."""
        ...

    def events(self, *, after_sequence: int | None) -> AsyncIterator[StreamedEvent]:
        """Follow ``WS_EVENTS`` (every ``ws.evt.>``), from after ``after_sequence`` or from now."""
        ...


class Gateway:
    """Everything a handler may reach: the application (through its store thread), the bus.

    A plain class rather than a dataclass: Litestar's signature model (msgspec) would otherwise
    try to rebuild it field by field for every request.
    """

    __slots__ = ("application", "bus", "executor", "health", "settings", "stopping")

    def __init__(
        self,
        *,
        application: GatewayApplication,
        executor: StoreExecutor,
        bus: Bus,
        settings: GatewaySettings,
        stopping: asyncio.Event,
    ) -> None:
        """Hold the parts handlers use."""
        self.application = application
        self.executor = executor
        self.bus = bus
        self.settings = settings
        self.stopping = stopping
        self.health: SharedCheck[Any] = SharedCheck(settings.health_fresh_for)
        """The health answer's round of pings, shared (``api_gateway.http.shared_check``)."""

    async def query(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a read of the application on the store thread."""
        return await self.executor.run(fn, *args)

    def lookup(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a lookup of one read-model entry by its key here, on the loop, with no thread hop.

        Only for reads that get one entry of an in-memory dict (atomic under the GIL, so the
        store thread's projections cannot be seen half done) and write nothing: a key, a run
        token, a company. A read that iterates a read model stays on the store thread
        (:meth:`query`): a projection may change the dict's size while it iterates.
        """
        return fn(*args)

    async def act(self, principal: Principal, fn: Callable[..., T], *args: Any) -> T:
        """Run a use case on the store thread, its events recording ``principal`` as the cause."""
        cause = Cause(
            actor=principal.actor, run_id=principal.run_id, company_id=principal.company_id
        )
        with acting(cause):
            return await self.executor.run(fn, *args)


def provide_gateway(state: State) -> Gateway:
    """The gateway context stored on the app at creation."""
    gateway: Gateway = state.gateway
    return gateway


def provide_principal(
    request: Request[Any, Any, Any], gateway: NamedDependency[Gateway]
) -> Principal:
    """The principal the authentication middleware found for this request.

    It takes ``gateway`` only so Litestar resolves the two one after the other: two providers
    with nothing between them are resolved in an anyio task group, one per request (a tenth of a
    trivial read's time).
    """
    del gateway
    principal: Principal = request.user
    return principal


def dependencies() -> dict[str, Provide]:
    """The app-wide providers."""
    return {
        "gateway": Provide(provide_gateway, sync_to_thread=False),
        "principal": Provide(provide_principal, sync_to_thread=False),
    }
