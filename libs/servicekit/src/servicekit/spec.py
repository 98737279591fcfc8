"""What a service declares about itself; ``run_service`` does the rest."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from contracts.errors import DetailedError, ErrorCode

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS
    from nats.js import JetStreamContext

    from contracts.base import Event
    from contracts.subjects import ServiceToken
    from eventstore import OutboxRelay, ServiceApplication, StoreExecutor
    from natsbus import BusClient, BusService
    from servicekit.instances import InstanceDirectory
    from servicekit.leadership import Leadership
    from servicekit.operation_runner import OperationRunner
    from servicekit.settings import ServiceSettings
    from servicekit.shutdown import ShutdownBudget

__all__ = ["InboxHandler", "ServiceRuntime", "ServiceSpec"]

T = TypeVar("T")

InboxHandler = Callable[[Any, Any, Any], None]
"""``handler(app, event, tracking)``: runs in the store thread with the service's application;
saves what it produces with ``tracking``."""


@dataclass(frozen=True, kw_only=True)
class ServiceSpec:
    """A service's identity and the parts only it provides."""

    token: ServiceToken
    name: str
    version: str
    application_class: type[ServiceApplication]
    to_contract: Callable[[Any], Event | None]
    register: Callable[[ServiceRuntime], Awaitable[None]] | None = None
    upstreams: Mapping[ServiceToken, InboxHandler] = field(default_factory=dict)
    description: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    """More micro metadata for each instance's ping and info (beside ``instance`` and ``node``;
    the realizer says which ``part`` it serves)."""


@dataclass(kw_only=True)
class ServiceRuntime:
    """Everything a running service holds; handed to ``ServiceSpec.register``."""

    spec: ServiceSpec
    settings: ServiceSettings
    nc: NATS
    js: JetStreamContext
    bus: BusClient
    app: ServiceApplication
    executor: StoreExecutor
    service: BusService
    relay: OutboxRelay
    operations: OperationRunner
    leadership: Leadership
    other_leases: list[Leadership]
    """The service's leases besides ``leadership``'s that this instance takes part in (the
    realizer's host part adds ``host:<node>``): ``clipyard status`` shows who holds them."""
    instances: InstanceDirectory
    """The live instances of this service on the bus (their ids)."""
    """This instance's side of the service's lease: ``leadership.add(...)`` / ``add_task(...)``
    run work only while it holds it (started after ``register``, inside the lease's fence)."""
    quit: asyncio.Event
    exit_stack: AsyncExitStack
    """The service's own cleanups: they run as one stage of the stop, after the endpoints stop
    and before the inboxes, within their share of the shutdown deadline."""
    shutdown: ShutdownBudget
    """The stop's deadline, shared among its stages (``settings.shutdown_timeout``)."""

    async def store(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a synchronous store call on the store's thread (contextvars copied)."""
        return await self.executor.run(fn, *args, **kwargs)

    async def follow(self) -> None:
        """Project what other replicas saved that this one has not yet, one batch per store
        call (requests run in between), until nothing is left: what any replica committed
        before this call is then in this replica's read models."""
        batch = self.app.projection_batch_size
        while await self.executor.run(self.app.follow_store, batch) >= batch:
            pass

    async def store_fresh(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """:meth:`store`, read-your-writes across replicas: when ``fn`` answers ``not_found``,
        read what other replicas saved (this one's follower may be a few milliseconds behind a
        write a client was just answered), and when this replica's read models moved since
        ``fn`` looked (by this call or its follower meanwhile), run ``fn`` again. Use cases raise
        ``not_found`` before they save anything, so only the second run can write."""

        def attempt() -> tuple[int, T | None, DetailedError | None]:
            seen = self.app.projected_upto
            try:
                return seen, fn(*args, **kwargs), None
            except DetailedError as error:
                if error.code != ErrorCode.NOT_FOUND:
                    raise
                return seen, None, error

        seen, result, missing = await self.executor.run(attempt)
        if missing is None:
            return cast("T", result)
        try:
            await self.follow()
        except Exception:  # the store is unreachable now: the first answer stands
            raise missing from None
        if self.app.projected_upto == seen:
            raise missing
        return await self.executor.run(fn, *args, **kwargs)
