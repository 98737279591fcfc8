"""``GET /api/health``: every service pinged in parallel, NATS and the store checked (no key).

Anyone may ask, so a failing part is named with a short reason that reveals nothing about the
deployment (no host, role or database names, no exception text); the detail goes to the log.
"""

from __future__ import annotations

import asyncio
import logging

import nats.errors
from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec

from api_gateway.http.dependencies import Gateway
from contracts.http import ComponentHealth, Health, ServiceHealth
from contracts.subjects import SERVICE_NAMES

__all__ = ["HealthController"]

log = logging.getLogger(__name__)

NOT_RUNNING = "not running (nothing answers its ping)"
PING_FAILED = "the ping failed (see the gateway's log)"
STORE_FAILED = "the store does not answer queries (see the gateway's log)"


async def _ping(gateway: NamedDependency[Gateway], name: str) -> ServiceHealth:
    timeout = gateway.settings.health_timeout
    try:
        ping = await asyncio.wait_for(gateway.bus.ping(name, timeout=timeout), timeout)
    except TimeoutError:
        return ServiceHealth(status="down", error=f"no answer to ping within {timeout:g} s")
    except nats.errors.NoRespondersError:
        return ServiceHealth(status="down", error=NOT_RUNNING)
    except Exception:  # any NATS failure means the service is not reachable
        log.warning("health: pinging %s failed", name, exc_info=True)
        return ServiceHealth(status="down", error=PING_FAILED)
    return ServiceHealth(status="ok", version=ping.version, latency_ms=ping.latency_ms)


async def _store(gateway: NamedDependency[Gateway]) -> ComponentHealth:
    kind = gateway.settings.service.store.kind
    timeout = gateway.settings.health_timeout
    try:
        await asyncio.wait_for(gateway.query(gateway.application.check_store), timeout)
    except TimeoutError:
        return ComponentHealth(status="down", kind=kind, error=f"no answer within {timeout:g} s")
    except Exception:  # the store is unusable, whatever the reason
        log.warning("health: the store check failed", exc_info=True)
        return ComponentHealth(status="down", kind=kind, error=STORE_FAILED)
    return ComponentHealth(status="ok", kind=kind)


class HealthController(Controller):
    """Liveness of the whole system, as seen from the gateway."""

    path = "/api/health"
    tags = ["health"]

    @get(
        "/",
        operation_id="getHealth",
        opt={"exclude_from_auth": True},
        security=[{}],
        responses={
            503: ResponseSpec(
                data_container=Health,
                generate_examples=False,
                description="`degraded`: a service, NATS or the store is down (see `failing`)",
            )
        },
    )
    async def get_health(self, gateway: NamedDependency[Gateway]) -> Response[Health]:
        """Ping the five services (``$SRV.PING.<name>``), check NATS and the store; no key needed.

        200 ``{status: "ok", ...}`` when everything answers; 503 ``{status: "degraded", ...}``
        naming the failing parts in ``failing`` and in each part's ``error``. One round of pings
        runs at a time, and its answer serves the requests of the next
        ``CLIPYARD_HEALTH_FRESH_FOR`` seconds (0.5 by default).
        """
        health = await gateway.health.get(lambda: _check(gateway))
        return Response(health, status_code=503 if health.failing else 200)


async def _check(gateway: Gateway) -> Health:
    """One round: every service pinged in parallel, NATS and the store checked."""
    names = list(SERVICE_NAMES.values())
    answers = await asyncio.gather(*(_ping(gateway, name) for name in names))
    services = dict(zip(names, answers, strict=True))
    nats = ComponentHealth(status="ok" if gateway.bus.connected else "down")
    store = await _store(gateway)
    failing = [name for name, one in services.items() if one.status != "ok"]
    failing += [part for part, one in (("nats", nats), ("store", store)) if one.status != "ok"]
    return Health(
        status="degraded" if failing else "ok",
        services=services,
        nats=nats,
        store=store,
        failing=failing,
    )
