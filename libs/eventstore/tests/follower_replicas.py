"""Replicas of the sample gateway on one store, each with its store thread and its follower."""

from __future__ import annotations

import asyncio
import contextlib
import random
import statistics
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

import pytest
from eventstore_sample import GatewayApp

from eventstore import StoreExecutor, StoreFollower, StoreSettings, build_application, verify_replay

T = TypeVar("T")


@dataclass
class Replica:
    """One instance of the service: its application, store thread and follower."""

    name: str
    app: GatewayApp
    executor: StoreExecutor
    follower: StoreFollower

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.executor.run(fn, *args)

    async def sees(self, company_id: UUID, name: str | None = None) -> bool:
        """True once the read model holds the company (with ``name``, when given)."""

        def check() -> bool:
            row = self.app.companies.get(str(company_id))
            return row is not None and (name is None or row["name"] == name)

        return await self.executor.run(check)

    async def close(self) -> None:
        await self.follower.stop()
        await self.executor.shutdown(5.0, last=self.app.close)


@contextlib.asynccontextmanager
async def replicas(
    settings: StoreSettings,
    count: int = 2,
    *,
    cls: type[GatewayApp] = GatewayApp,
    **follower_args: Any,
) -> AsyncIterator[list[Replica]]:
    """``count`` instances of ``cls`` on one store, each following it (stopped afterwards)."""
    started: list[Replica] = []
    try:
        for index in range(count):
            name = "AB"[index] if count <= 2 else str(index)
            executor = StoreExecutor(name=f"replica-{name}")
            app = await executor.run(build_application, cls, service="gateway", settings=settings)
            follower = StoreFollower(app, executor, **follower_args)
            started.append(Replica(name, app, executor, follower))
            await follower.start()
        yield started
    finally:
        for replica in started:
            await replica.close()


async def seen_after(reader: Replica, company_id: UUID, *, timeout: float = 3.0) -> float:
    """Seconds until ``reader``'s read model holds ``company_id`` (fails after ``timeout``)."""
    started = time.perf_counter()
    while not await reader.sees(company_id):
        if time.perf_counter() - started > timeout:
            pytest.fail(f"replica {reader.name} did not see {company_id} within {timeout} s")
        await asyncio.sleep(0.002)
    return time.perf_counter() - started


async def convergence(
    writer: Replica, reader: Replica, writes: int, *, prefix: str, timeout: float = 3.0
) -> list[float]:
    """Create ``writes`` companies on ``writer``; seconds until each is in ``reader``'s model."""
    delays = []
    jitter = random.Random(writes)  # timing, not secrets
    for index in range(writes):
        # At a random moment of the reader's poll cycle, as writes come in real use.
        await asyncio.sleep(jitter.uniform(0.01, 0.2))
        company_id = await writer.run(writer.app.create_company, f"Co {index}", f"{prefix}{index}")
        delays.append(await seen_after(reader, company_id, timeout=timeout))
    return delays


def report(what: str, delays: list[float]) -> float:
    """Print and return the median (seconds)."""
    median = statistics.median(delays)
    print(
        f"\n{what}: median {median * 1000:.1f} ms, max {max(delays) * 1000:.1f} ms "
        f"over {len(delays)} writes"
    )
    return median


async def interleave(pair: list[Replica], saves: int) -> None:
    """``saves`` saves alternating between the replicas (creates, renames, ticks), none waiting
    for the other replica to follow, then both concurrently (their store threads race)."""
    companies: list[UUID] = []
    for index in range(saves // 2):
        replica = pair[index % 2]
        if index % 3 == 0 or not companies:
            companies.append(await replica.run(replica.app.create_company, "Co", f"I{index}"))
        elif index % 3 == 1:
            await replica.run(replica.app.rename, companies[-1], f"Co {index}")
        else:
            await replica.run(replica.app.tick, companies[index % len(companies)], 2)

    async def own_company(replica: Replica, rounds: int) -> None:
        company_id = await replica.run(replica.app.create_company, "Own", f"OWN{replica.name}")
        for step in range(rounds - 1):
            await replica.run(replica.app.tick, company_id, step % 3 + 1)

    half = saves - saves // 2
    await asyncio.gather(*(own_company(replica, half // len(pair)) for replica in pair))


async def settled(pair: list[Replica], *, timeout: float = 3.0) -> int:
    """Wait until every replica has projected the store's last notification; return its id."""
    last = await pair[0].run(pair[0].app.last_notification_id)
    started = time.perf_counter()
    for replica in pair:
        while await replica.run(lambda r=replica: r.app.projected_upto) < last:
            if time.perf_counter() - started > timeout:
                pytest.fail(
                    f"replica {replica.name} stuck at {replica.app.projected_upto} < {last}"
                )
            await asyncio.sleep(0.01)
    return last


async def assert_same_as_rebuild(replica: Replica, settings: StoreSettings) -> None:
    """The replica's read models equal a fresh instance's rebuilt from the store."""
    fresh = build_application(GatewayApp, service="gateway", settings=settings)
    try:
        report_ = await replica.run(verify_replay, fresh, replica.app)
    finally:
        fresh.close()
    assert report_.ok, report_.differences
