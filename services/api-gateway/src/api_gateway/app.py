"""The composition root: ``create_app()`` builds the HTTP app; ``main()`` runs the gateway process.

Wiring only. Tests call :func:`create_app` with the in-memory store and a fake bus. The process
runs through ``servicekit.run_service``: its ``register`` hook mounts the bus endpoints and starts
uvicorn on the running loop (:mod:`api_gateway.http.server`).
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Any

from litestar import Litestar
from litestar.datastructures import State
from litestar.middleware import DefineMiddleware

from api_gateway.adapters.bus import NatsBus
from api_gateway.application import GatewayApplication
from api_gateway.controllers import CONTROLLERS
from api_gateway.endpoints import RunTokenEndpoints
from api_gateway.http.api_headers import add_api_headers
from api_gateway.http.dependencies import Bus, Gateway, dependencies
from api_gateway.http.docs_assets import docs_asset
from api_gateway.http.errors import exception_handlers
from api_gateway.http.input_guard import input_guard
from api_gateway.http.openapi_document import (
    allow_header,
    openapi_config,
    openapi_json,
    warm_up_later,
)
from api_gateway.http.security import (
    PUBLIC_OPT,
    UNAUTHENTICATED_METHODS,
    AuthenticationMiddleware,
    access_guard,
)
from api_gateway.http.server import start_http
from api_gateway.http.tracing import TracingMiddleware
from api_gateway.inbox import controller_inbox
from api_gateway.publishing import to_contract
from api_gateway.settings import SERVICE_NAME, SERVICE_VERSION, GatewaySettings
from api_gateway.ui import ui_router, ui_static_router, ui_template_config
from eventstore import StoreExecutor
from servicekit import ServiceRuntime, ServiceSpec, run_service
from servicekit.routes import mount

if TYPE_CHECKING:
    from litestar.connection import ASGIConnection
    from litestar.handlers.base import BaseRouteHandler

__all__ = ["build_spec", "create_app", "main"]


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
        route_handlers=[openapi_json, docs_asset, *CONTROLLERS, ui_router(), ui_static_router()],
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
        guards=[_guard],
        exception_handlers=exception_handlers(),  # type: ignore[arg-type]
        # nosniff on /api, and sandbox on its text/plain; Allow with every documented method
        before_send=[add_api_headers, allow_header],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=openapi_config(),
        template_config=ui_template_config(),
        logging_config=None,  # the service's JSON logging (telemetry.logs) stays in charge
        state=State({"gateway": gateway}),
        on_startup=[warm_up_later],
        on_shutdown=[partial(_shut_down, gateway, owned)],
        debug=debug,
    )


async def _guard(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
    """The app's two guards as one: Litestar copies the route handler for every guard it calls
    (a twentieth of a trivial read's time each)."""
    await access_guard(connection, handler)
    await input_guard(connection, handler)


def _shut_down(gateway: Gateway, close_store: bool) -> None:
    gateway.stopping.set()  # open event streams end
    if close_store:
        gateway.executor.close()


def build_spec(settings: GatewaySettings) -> ServiceSpec:
    """The gateway as a service: its application, its publishing, its run-token endpoint, the
    controller's inbox (ended runs revoke their tokens, deleted agents their keys), HTTP."""

    async def register(runtime: ServiceRuntime) -> None:
        application: GatewayApplication = runtime.app  # type: ignore[assignment]
        await mount(runtime.service, RunTokenEndpoints(application, runtime.executor))
        bus = NatsBus(runtime.nc, runtime.js, runtime.bus)
        app = create_app(
            application=application,
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


async def main() -> None:
    """Run the gateway until SIGTERM or SIGINT."""
    settings = GatewaySettings.from_env()
    await run_service(build_spec(settings), settings.service)
