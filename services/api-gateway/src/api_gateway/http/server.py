"""The embedded HTTP server: uvicorn on the service's loop, its signals left to the service
lifecycle, stopped when the service quits, well inside the 5 s budget."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import uvicorn

if TYPE_CHECKING:
    from litestar import Litestar

    from api_gateway.settings import GatewaySettings
    from servicekit import ServiceRuntime

__all__ = ["HttpServerError", "start_http"]

log = logging.getLogger(__name__)


class _EmbeddedServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the service lifecycle owns SIGTERM/SIGINT."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class HttpServerError(RuntimeError):
    """The HTTP server could not start (the port is taken, say)."""


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
