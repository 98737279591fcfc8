"""The uniform service lifecycle: start, serve, and stop within the shutdown budget.

``main()`` of every service is ``asyncio.run(run_service(spec))``. Start: telemetry and logs, the
store (read models rebuilt, then following what other replicas save), NATS and the event stream, a
check that no live instance of the service already uses this instance's id, the micro service with
the endpoints every service answers, the service's own ``register`` hook, then this instance's
side of the service's lease (:mod:`servicekit.leadership`): while it holds the lease it runs the
singleton work (the outbox relay, the inboxes, the sweep for operations of stopped instances, and
what ``register`` added), inside the lease's fence. Stop (SIGTERM or SIGINT): endpoints first
(in-flight handlers finish), long operations, the service's own hooks, the singleton work (inboxes,
relay flush) and the lease released, NATS drain, the store follower, store close (after the store
thread's queue), then the telemetry flush. One deadline covers it all
(``settings.shutdown_timeout``): each stage gets its share of the time that remains and is cut off
when it is spent (:mod:`servicekit.shutdown`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import partial
from typing import TYPE_CHECKING, Any

from eventstore import Inbox, OutboxRelay, StoreExecutor, StoreFollower, build_application
from eventstore.follower import follow_all
from natsbus import BusClient, BusService, connect
from natsbus.instances import INSTANCE_METADATA
from natsbus.jetstream import START_WAIT, ensure_event_stream
from servicekit.endpoints import register_common_endpoints
from servicekit.health import health_stats
from servicekit.instances import InstanceDirectory
from servicekit.leadership import Leadership
from servicekit.operation_runner import OperationRunner, sweep_operations
from servicekit.outbox import published_contract
from servicekit.settings import ServiceSettings
from servicekit.shutdown import EXIT_RESERVE, TELEMETRY_SHARE, ShutdownBudget
from servicekit.spec import InboxHandler, ServiceRuntime, ServiceSpec
from servicekit.store_replies import service_error_mapper
from telemetry import configure_telemetry, shutdown_telemetry
from telemetry.logs import configure_logging

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS
    from nats.js import JetStreamContext

    from eventstore import ServiceApplication

__all__ = ["run_service", "start_service"]

log = logging.getLogger(__name__)


async def run_service(spec: ServiceSpec, settings: ServiceSettings | None = None) -> None:
    """Run ``spec`` until SIGTERM or SIGINT, then stop it cleanly."""
    settings = settings or ServiceSettings.from_env(spec.name)
    configure_logging(spec.name, log_file=settings.log_file, rotation=settings.log_rotation)
    configure_telemetry(
        spec.name,
        home=settings.home,
        version=spec.version,
        spans_rotation=settings.spans_rotation,
    )
    quit_event = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, quit_event.set)
    budget: ShutdownBudget | None = None
    try:
        async with AsyncExitStack() as stack:
            runtime = await start_service(spec, settings, stack, quit_event)
            budget = runtime.shutdown
            log.info("service ready", extra={"service": spec.name, "node": settings.node_id})
            await quit_event.wait()
            budget.start()
            log.info("service stopping", extra={"service": spec.name})
            started = time.monotonic()
        log.info(
            "service stopped",
            extra={"service": spec.name, "stop_ms": round((time.monotonic() - started) * 1000)},
        )
        del runtime
    finally:
        flush = TELEMETRY_SHARE if budget is None else min(TELEMETRY_SHARE, budget.remaining())
        shutdown_telemetry(timeout_millis=max(100, round(flush * 1000)))


async def start_service(
    spec: ServiceSpec,
    settings: ServiceSettings,
    stack: AsyncExitStack,
    quit_event: asyncio.Event,
) -> ServiceRuntime:
    """Start every part of ``spec`` on ``stack``; closing the stack stops them in reverse order.

    Every stage is registered through the runtime's :class:`ShutdownBudget` (``runtime.shutdown``),
    whose clock starts with the first stage to stop (or with ``runtime.shutdown.start()``).
    """
    budget = ShutdownBudget(settings.shutdown_timeout - EXIT_RESERVE)
    executor, app = await _open_store(spec, settings, stack, budget)
    nc = await _connect(spec, settings, stack, budget)
    js = nc.jetstream()
    instances = InstanceDirectory(nc, spec.name, own=settings.instance_id)
    await instances.refuse_duplicate(settings.instance_id)
    leadership, relay, operations = _singleton_work(spec, settings, app, executor, js, instances)
    budget.push(stack, "singleton work", leadership.stop, weight=2.0)

    other_leases: list[Leadership] = []  # a service's leases besides its own (status shows them)
    hooks = AsyncExitStack()
    # Silent until every endpoint is registered: a ping answered means the service is up.
    service = await BusService.start(
        nc,
        name=spec.name,
        version=spec.version,
        description=spec.description or spec.name,
        metadata={
            **spec.metadata,
            INSTANCE_METADATA: settings.instance_id,
            "node": settings.node_id,
        },
        announce=False,
        stats=partial(health_stats, app, leadership=leadership, others=other_leases),
        error_mapper=service_error_mapper,
    )
    # Operations name the process that runs them (its micro id, new at every start), so that a
    # restart under the same instance id still has its predecessor's operations swept.
    operations.instance = service.id
    runtime = ServiceRuntime(
        spec=spec,
        settings=settings,
        nc=nc,
        js=js,
        bus=BusClient(nc),
        app=app,
        executor=executor,
        service=service,
        relay=relay,
        operations=operations,
        leadership=leadership,
        other_leases=other_leases,
        instances=instances,
        quit=quit_event,
        exit_stack=hooks,
        shutdown=budget,
    )
    await register_common_endpoints(runtime)
    _add_inboxes(runtime)
    # What the service's register hook pushes on runtime.exit_stack stops as one stage, after the
    # endpoints and before the singleton work.
    budget.push(stack, "service hooks", _closer(hooks))
    if spec.register is not None:
        await spec.register(runtime)
    await nc.flush()  # every endpoint is known to the server before the service says it is up
    await service.announce()
    # The relay, the inboxes and the service's singleton work start here if this instance
    # gets the lease (a lone instance does at once), else when it does.
    await leadership.start()
    # Registered last, so they run first on shutdown: stop taking requests, let long work end.
    budget.push(stack, "operations", operations.stop)
    budget.push(stack, "endpoints", service.stop, weight=2.0)
    return runtime


def _singleton_work(
    spec: ServiceSpec,
    settings: ServiceSettings,
    app: ServiceApplication,
    executor: StoreExecutor,
    js: JetStreamContext,
    instances: InstanceDirectory,
) -> tuple[Leadership, OutboxRelay, OperationRunner]:
    """This instance's side of the service's lease, with the work every service runs under it:
    the outbox relay and the sweep for operations of stopped instances (the inboxes and the
    service's own work are added later)."""
    leadership = Leadership(
        app.lease_table,
        service=spec.name,
        holder=settings.instance_id,
        ttl=settings.lease_ttl,
        alive=instances.alive,
    )
    operations = OperationRunner(app, executor, service=spec.name)
    relay = OutboxRelay(
        app,
        js,
        service=spec.token,
        to_contract=published_contract(spec.name, spec.to_contract),
        executor=executor,
        duplicate_window=settings.event_duplicate_window,
        max_age=settings.event_retention_days * 86400,
        replicas=settings.event_replicas,
    )
    # Every replica refuses an event that could never be published; only the leader publishes.
    app.publication_check = relay.check_publishable
    leadership.add("relay", relay)
    leadership.add_task("operations sweep", partial(sweep_operations, operations, instances))
    return leadership, relay, operations


async def _open_store(
    spec: ServiceSpec, settings: ServiceSettings, stack: AsyncExitStack, budget: ShutdownBudget
) -> tuple[StoreExecutor, ServiceApplication]:
    """Open the service's store on its own thread (read models rebuilt, then following the whole
    store); it closes last."""
    executor = StoreExecutor(name=f"{spec.name}-store")
    try:
        app: ServiceApplication = await executor.run(
            build_application, spec.application_class, service=spec.token, settings=settings.store
        )
    except BaseException:
        executor.close(wait=False)
        raise

    async def close_store(timeout: float) -> None:
        # The store closes on its own thread after every call queued before: none runs on a
        # closed store, and the wait is bounded (the thread is a daemon).
        await executor.shutdown(timeout, last=app.close)

    budget.push(stack, "store", close_store)
    # Replicas share the store: the read models follow what the others save (eventstore.follower).
    follower = StoreFollower(app, executor)
    await follower.start()
    budget.push(stack, "store follower", follower.stop)
    return executor, app


async def _connect(
    spec: ServiceSpec, settings: ServiceSettings, stack: AsyncExitStack, budget: ShutdownBudget
) -> NATS:
    """Connect to NATS (drained on stop) and make sure the event stream exists, waiting up to
    ``START_WAIT`` (30 s) for JetStream: started with a NATS cluster (compose), a service may
    connect before the servers have elected a JetStream meta leader."""
    nc = await connect(
        settings.nats.url,
        name=spec.name,
        user=settings.nats.user,
        password=settings.nats.password,
        inbox_prefix=settings.nats.inbox_prefix,
    )
    budget.push(stack, "nats", partial(_drain, nc))
    await ensure_event_stream(
        nc.jetstream(),
        duplicate_window=settings.event_duplicate_window,
        max_age=settings.event_retention_days * 86400,
        replicas=settings.event_replicas,
        wait=START_WAIT,
    )
    return nc


def _add_inboxes(runtime: ServiceRuntime) -> None:
    """Consume every upstream the spec names, each with its handler, while this instance leads:
    the copies an inbox writes are written once, in the shared store, and every replica's read
    models follow them there."""
    app, js, executor = runtime.app, runtime.js, runtime.executor
    for upstream, handler in runtime.spec.upstreams.items():
        fresh = partial(_after_following, handler, app)
        inbox = Inbox(app, js, upstream=upstream, handler=fresh, executor=executor)
        runtime.leadership.add(f"inbox:{upstream}", inbox)


def _after_following(
    handler: InboxHandler, app: ServiceApplication, event: Any, tracking: Any
) -> None:
    """``handler(app, event, tracking)`` once ``app`` has projected everything the store holds
    (on the store's thread): the lease holder that reacts may not be the replica that saved what
    the reaction looks up (an execution workspace the host part realized a moment ago), and its
    follower may be a few milliseconds behind."""
    follow_all(app)
    handler(app, event, tracking)


def _closer(hooks: AsyncExitStack) -> Callable[[float], Awaitable[None]]:
    async def close(_timeout: float) -> None:
        await hooks.aclose()

    return close


async def _drain(nc: object, timeout: float) -> None:
    try:
        await asyncio.wait_for(nc.drain(), timeout)  # type: ignore[attr-defined]
    except (TimeoutError, Exception):
        log.warning("NATS drain did not finish in time; closing", exc_info=True)
        await nc.close()  # type: ignore[attr-defined]
