"""What the cluster tests do through the gateways and the bus of a :class:`ClusterStack`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from clipyard_cli.bus import service_instances
from clipyard_cli.clusterstack import ClusterStack

LEASE_TTL = 2.0
"""Seconds: the lease's time to live in these tests (5 in production; benchmarks use that)."""


@dataclass
class Cluster:
    """A started cluster with an HTTP client per gateway (admin key) and a bus connection."""

    stack: ClusterStack
    gateways: list[httpx.AsyncClient]
    nc: Any

    @classmethod
    @contextlib.asynccontextmanager
    async def of(cls, stack: ClusterStack) -> AsyncIterator[Cluster]:
        headers = {"Authorization": f"Bearer {stack.admin_key}"}
        clients = [
            httpx.AsyncClient(base_url=url, headers=headers, timeout=30.0)
            for url in stack.gateway_urls
        ]
        nc = await stack.connect()
        try:
            yield cls(stack, clients, nc)
        finally:
            await nc.close()
            for client in clients:
                await client.aclose()

    async def leader(self, service: str) -> tuple[str, int | None]:
        """The instance id holding ``service``'s lease and its token (("", None): none)."""
        for row in await service_instances(self.nc, service):
            if row.health is not None and row.health.role == "leader":
                return row.health.instance, row.health.lease_token
        return "", None

    def replica_index(self, instance: str) -> int:
        """``api-gateway-2`` -> 2."""
        return int(instance.rsplit("-", 1)[1])


async def until(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> float:
    """Seconds until ``await check()`` holds (fails after ``timeout``)."""
    began = time.monotonic()
    while not await check():
        if time.monotonic() - began > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.02)
    return time.monotonic() - began


async def new_company(http: httpx.AsyncClient, name: str) -> dict[str, Any]:
    answer = await http.post("/api/companies", json={"name": name})
    assert answer.status_code == 201, answer.text
    company: dict[str, Any] = answer.json()
    return company


async def board_key(http: httpx.AsyncClient, company_id: str) -> dict[str, Any]:
    answer = await http.post(
        f"/api/companies/{company_id}/api-keys", json={"name": "board", "kind": "board"}
    )
    assert answer.status_code == 201, answer.text
    key: dict[str, Any] = answer.json()
    return key


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def decode(data: bytes) -> Any:
    return msgspec.json.decode(data)


async def retrying(
    send: Callable[[], Awaitable[httpx.Response]], *, attempts: int = 20
) -> httpx.Response:
    """``await send()`` again while it answers 503 "retry" (a replica paused or gone, a NATS
    leader election), as a client does; the last answer otherwise."""
    answer = await send()
    for _ in range(attempts - 1):
        if answer.status_code != 503:
            break
        await asyncio.sleep(0.3)
        answer = await send()
    return answer
