"""SingleFlightCache: kept values for the TTL, one load per key at a time."""

from __future__ import annotations

import asyncio

import pytest

from git_credentials.adapters.cache import SingleFlightCache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_kept_values_are_served_until_the_ttl() -> None:
    clock = Clock()
    cache: SingleFlightCache[str] = SingleFlightCache(ttl=300, clock=clock)
    loads: list[str] = []

    async def load() -> str:
        loads.append("x")
        return f"v{len(loads)}"

    assert await cache.get("k", load, keep=lambda _: True) == "v1"
    clock.now += 299.9
    assert await cache.get("k", load, keep=lambda _: True) == "v1"
    assert await cache.get("other", load, keep=lambda _: True) == "v2"
    clock.now += 0.1
    assert await cache.get("k", load, keep=lambda _: True) == "v3"
    assert len(loads) == 3


async def test_values_not_kept_are_loaded_again() -> None:
    cache: SingleFlightCache[str] = SingleFlightCache(ttl=300, clock=Clock())
    answers = iter(["unknown", "unknown", "merged"])

    async def load() -> str:
        return next(answers)

    keep = lambda value: value != "unknown"  # noqa: E731
    assert [await cache.get("k", load, keep=keep) for _ in range(4)] == [
        "unknown",
        "unknown",
        "merged",
        "merged",
    ]


async def test_concurrent_misses_share_one_load_and_survive_a_cancelled_caller() -> None:
    cache: SingleFlightCache[int] = SingleFlightCache(ttl=300, clock=Clock())
    release = asyncio.Event()
    calls = 0

    async def load() -> int:
        nonlocal calls
        calls += 1
        await release.wait()
        return 42

    waiters = [asyncio.create_task(cache.get("k", load, keep=lambda _: True)) for _ in range(5)]
    await asyncio.sleep(0)
    waiters[0].cancel()
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*waiters[1:])
    assert results == [42, 42, 42, 42]
    assert calls == 1
    assert waiters[0].cancelled()
    assert await cache.get("k", load, keep=lambda _: True) == 42
    assert calls == 1


async def test_a_failing_load_reaches_every_waiter_and_is_not_kept() -> None:
    cache: SingleFlightCache[int] = SingleFlightCache(ttl=300, clock=Clock())
    calls = 0

    async def load() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        raise RuntimeError("boom")

    results = await asyncio.gather(
        *(cache.get("k", load, keep=lambda _: True) for _ in range(3)), return_exceptions=True
    )
    assert [type(r) for r in results] == [RuntimeError] * 3
    assert calls == 1
    with pytest.raises(RuntimeError):
        await cache.get("k", load, keep=lambda _: True)
    assert calls == 2


async def test_the_oldest_entries_go_past_the_size_limit() -> None:
    clock = Clock()
    cache: SingleFlightCache[str] = SingleFlightCache(ttl=300, clock=clock, max_entries=2)

    async def load_a() -> str:
        return "a"

    for key in ("k1", "k2", "k3"):
        await cache.get(key, load_a, keep=lambda _: True)
    assert cache.cached("k1") is None
    assert cache.cached("k2") == "a"
    assert cache.cached("k3") == "a"


async def test_aclose_cancels_running_loads() -> None:
    cache: SingleFlightCache[int] = SingleFlightCache(ttl=300, clock=Clock())

    async def forever() -> int:
        await asyncio.Event().wait()
        return 0

    waiter = asyncio.create_task(cache.get("k", forever, keep=lambda _: True))
    await asyncio.sleep(0)
    await cache.aclose()
    with pytest.raises(asyncio.CancelledError):
        await waiter
