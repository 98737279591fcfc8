"""The composition root: ``create_app()`` builds the HTTP app; ``main()`` runs the gateway process.

Tests call :func:`create_app` with the in-memory store and a fake bus. The process runs through
``servicekit.run_service``: its ``register`` hook starts uvicorn on the running loop (signals stay
with the service lifecycle) and stops it when the service quits, well inside the 5 s budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from functools import partial
from typing import Any

import uvicorn
from litestar import Litestar, Request, Router, get
from litestar.datastructures import State
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme, Tag
from litestar.types import Message, Scope

from api_gateway.allow_header import AllowIndex
from api_gateway.api_headers import add_api_headers
from api_gateway.application import GatewayApplication
from api_gateway.bus import NatsBus
from api_gateway.controllers import CONTROLLERS
from api_gateway.dependencies import Bus, Gateway, dependencies
from api_gateway.errors import exception_handlers
from api_gateway.handlers import controller_inbox, register_bus_endpoints
from api_gateway.input_guard import input_guard
from api_gateway.openapi_strict import (
    DOC_STATE,
    StrictJsonRenderPlugin,
    StrictSwaggerRenderPlugin,
    tighten,
)
from api_gateway.publishing import to_contract
from api_gateway.security import (
    PUBLIC_OPT,
    UNAUTHENTICATED_METHODS,
    AuthenticationMiddleware,
    access_guard,
)
from api_gateway.settings import SERVICE_NAME, SERVICE_VERSION, GatewaySettings
from api_gateway.tracing import TracingMiddleware
from api_gateway.ui import ui_router, ui_static_router, ui_template_config
from contracts.errors import CATALOGUE
from eventstore import StoreExecutor
from servicekit import ServiceRuntime, ServiceSpec, run_service

__all__ = ["build_spec", "create_app", "main"]

log = logging.getLogger(__name__)

_DESCRIPTION = (
    "Clipyard's HTTP API. Send `Authorization: Bearer <key>` (the admin key, a board key, an "
    "agent key, or a run's token `cyr_...`) on every request except health, these docs and the "
    "session sign-in. Errors are "
    '`{"error", "code", "details"}`; every code, with its status: '
    + "; ".join(
        f"`{code.value}` ({entry.status}): {entry.description}" for code, entry in CATALOGUE.items()
    )
    + ". Each operation lists the codes it may answer."
)


@get(
    "/api/openapi.json",
    include_in_schema=False,
    opt={"exclude_from_auth": True},
    media_type="application/vnd.oai.openapi+json",
    sync_to_thread=False,
)
def openapi_json(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """The OpenAPI document (no key needed), as :mod:`api_gateway.openapi_strict` corrects it."""
    doc: dict[str, Any] = request.app.state.get(DOC_STATE) or request.app.openapi_schema.to_schema()
    return doc


def _openapi() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="Clipyard API",
        version=SERVICE_VERSION,
        description=_DESCRIPTION,
        openapi_router=Router(
            "/api/docs",
            route_handlers=[],
            include_in_schema=False,
            opt={"exclude_from_auth": True},
        ),
        render_plugins=[
            StrictSwaggerRenderPlugin(path="/"),
            StrictJsonRenderPlugin(path="/openapi.json"),
        ],
        use_handler_docstrings=True,
        components=Components(
            security_schemes={
                "bearer": SecurityScheme(
                    type="http",
                    scheme="bearer",
                    description="An admin, board or agent key, or a run token (`cyr_...`).",
                )
            }
        ),
        security=[{"bearer": []}],
        tags=[
            Tag(name="companies"),
            Tag(name="api-keys"),
            Tag(name="sessions"),
            Tag(name="projects"),
            Tag(name="project-workspaces"),
            Tag(name="issues"),
            Tag(name="execution-workspaces"),
            Tag(name="runtime-services"),
            Tag(name="secrets"),
            Tag(name="agents"),
            Tag(name="runs"),
        ],
    )


def create_app(
    *,
    application: GatewayApplication,
    bus: Bus,
    settings: GatewaySettings,
    executor: StoreExecutor | None = None,
    stopping: asyncio.Event | None = None,
    debug: bool = False,
) -> Litestar:
    """Build the gateway's HTTP app around an application and a bus.

    Args:
        application: The gateway's event-sourced application (read models included).
        bus: The bus port (``NatsBus`` in the process, a fake in tests).
        settings: The gateway settings.
        executor: The store thread; a new one when None (closed on app shutdown then).
        stopping: Set when the gateway stops; open event streams end then.
        debug: Litestar's debug mode.

    Returns:
        The Litestar app.
    """
    owned = executor is None
    store = executor or StoreExecutor(name=f"{SERVICE_NAME}-store")
    gateway = Gateway(
        application=application,
        executor=store,
        bus=bus,
        settings=settings,
        stopping=stopping or asyncio.Event(),
    )
    return Litestar(
        route_handlers=[openapi_json, *CONTROLLERS, ui_router(), ui_static_router()],
        dependencies=dependencies(),
        middleware=[
            TracingMiddleware(),
            DefineMiddleware(
                AuthenticationMiddleware,
                exclude_from_auth_key=PUBLIC_OPT,
                exclude_http_methods=tuple(UNAUTHENTICATED_METHODS),
            ),
        ],
        # Each /api route's (resource, action), asked of the access model; then what the
        # client sent: ids that are ids, text without control characters.
        guards=[access_guard, input_guard],
        exception_handlers=exception_handlers(),  # type: ignore[arg-type]
        # nosniff on /api, and sandbox on its text/plain; Allow with every documented method
        before_send=[add_api_headers, _allow_header],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=_openapi(),
        template_config=ui_template_config(),
        logging_config=None,  # the service's JSON logging (telemetry.logs) stays in charge
        state=State({"gateway": gateway}),
        on_startup=[_tighten_openapi],
        on_shutdown=[partial(_shut_down, gateway, owned)],
        debug=debug,
    )


def _tighten_openapi(app: Litestar) -> None:
    doc = tighten(app.openapi_schema.to_schema())  # once; /api/openapi.json and /api/docs serve it
    app.state[DOC_STATE] = doc
    app.state["allow"] = AllowIndex.of(doc)


async def _allow_header(message: Message, scope: Scope) -> None:
    index = scope["app"].state.get("allow")
    if index is not None:
        await index.hook(message, scope)


def _shut_down(gateway: Gateway, close_store: bool) -> None:
    gateway.stopping.set()  # open event streams end
    if close_store:
        gateway.executor.close()


class _EmbeddedServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the service lifecycle owns SIGTERM/SIGINT."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class HttpServerError(RuntimeError):
    """The HTTP server could not start (the port is taken, say)."""


def build_spec(settings: GatewaySettings) -> ServiceSpec:
    """The gateway as a service: its application, its publishing, its run-token endpoint, the
    controller's inbox (ended runs revoke their tokens, deleted agents their keys), HTTP."""

    async def register(runtime: ServiceRuntime) -> None:
        await register_bus_endpoints(runtime)
        bus = NatsBus(runtime.nc, runtime.js, runtime.bus)
        app = create_app(
            application=runtime.app,  # type: ignore[arg-type]
            bus=bus,
            settings=settings,
            executor=runtime.executor,
            stopping=runtime.quit,
        )
        await start_http(app, settings, runtime)

    return ServiceSpec(
        token="gateway",
        name=SERVICE_NAME,
        version=SERVICE_VERSION,
        application_class=GatewayApplication,
        to_contract=to_contract,
        register=register,
        upstreams={"controller": controller_inbox},
        description="Clipyard's HTTP edge: authentication, companies, keys, run tokens, events.",
    )


async def start_http(app: Litestar, settings: GatewaySettings, runtime: ServiceRuntime) -> None:
    """Serve ``app`` with uvicorn until the service quits; fail if it cannot listen."""
    service = settings.service
    config = uvicorn.Config(
        app,
        host=service.http_host,
        port=service.http_port,
        lifespan="on",
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=max(1, round(settings.shutdown_grace)),
    )
    server = _EmbeddedServer(config)

    async def serve() -> None:
        try:
            await server.serve()
        except SystemExit as exc:  # uvicorn exits when it cannot bind
            raise HttpServerError(
                f"could not serve HTTP on {service.http_host}:{service.http_port}"
            ) from exc

    serving = asyncio.create_task(serve(), name="http")
    # uvicorn exposes its readiness only as a flag (set once the sockets are bound).
    while not server.started and not serving.done():  # noqa: ASYNC110
        await asyncio.sleep(0.02)
    if serving.done():
        serving.result()

    def on_done(task: asyncio.Task[None]) -> None:
        if not runtime.quit.is_set():
            log.error("the HTTP server stopped unexpectedly; stopping the gateway")
            runtime.quit.set()

    serving.add_done_callback(on_done)

    async def stop() -> None:
        server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(serving), settings.shutdown_grace + 1.0)
        except TimeoutError:
            server.force_exit = True
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
        except Exception:
            log.warning("the HTTP server failed while stopping", exc_info=True)

    runtime.exit_stack.push_async_callback(stop)
    log.info("HTTP listening", extra={"host": service.http_host, "port": service.http_port})


async def main() -> None:
    """Run the gateway until SIGTERM or SIGINT."""
    settings = GatewaySettings.from_env()
    await run_service(build_spec(settings), settings.service)
