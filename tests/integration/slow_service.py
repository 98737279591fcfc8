"""A service that makes stopping hard, for the shutdown test: ``python -m slow_service``.

It consumes the gateway's events (an inbox) and serves two endpoints that never finish on their
own: ``ws.qry.controller.nap`` sleeps on the event loop, ``ws.qry.controller.store_nap`` sleeps on
the store thread (queued store calls and the store's close wait behind it).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from contracts import subjects
from contracts.base import Struct
from eventstore import ServiceApplication
from natsbus import RequestContext
from servicekit import ServiceRuntime, ServiceSpec, run_service

NAP = subjects.service_query("controller", "nap")
STORE_NAP = subjects.service_query("controller", "store_nap")


class Nap(Struct, frozen=True, kw_only=True):
    """How long to sleep."""

    seconds: float


class Quiet(ServiceApplication):
    """Holds nothing; the inbox records its positions."""


def _handle(app: Any, event: Any, tracking: Any) -> None:
    """Gateway events change nothing here."""


async def register(runtime: ServiceRuntime) -> None:
    """Add the two slow endpoints."""

    async def nap(request: Nap, ctx: RequestContext) -> str:
        await asyncio.sleep(request.seconds)
        return "rested"

    async def store_nap(request: Nap, ctx: RequestContext) -> str:
        await runtime.store(time.sleep, request.seconds)
        return "rested"

    await runtime.service.add_endpoint("nap", NAP, nap, Nap)
    await runtime.service.add_endpoint("store_nap", STORE_NAP, store_nap, Nap)


SPEC = ServiceSpec(
    token="controller",
    name="slow-service",
    version="0.0.1",
    application_class=Quiet,
    to_contract=lambda _event: None,
    register=register,
    upstreams={"gateway": _handle},
)

if __name__ == "__main__":
    asyncio.run(run_service(SPEC))
