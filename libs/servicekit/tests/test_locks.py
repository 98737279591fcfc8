"""KeyedLocks: one holder per key at a time, keys independent, nothing kept once idle (also
after an error or a cancelled waiter)."""

from __future__ import annotations

import asyncio

import pytest

from servicekit.locks import KeyedLocks


async def test_holders_of_one_key_take_turns_in_arrival_order() -> None:
    locks = KeyedLocks()
    trace: list[str] = []
    inside = 0

    async def work(name: str) -> None:
        nonlocal inside
        async with locks.hold("issue:1"):
            inside += 1
            assert inside == 1, f"{name} entered while another held the key"
            trace.append(f"{name} in")
            await asyncio.sleep(0.01)
            trace.append(f"{name} out")
            inside -= 1

    first = asyncio.create_task(work("a"))
    await asyncio.sleep(0)  # "a" holds the key before the others ask
    await asyncio.gather(first, work("b"), work("c"))
    assert trace == ["a in", "a out", "b in", "b out", "c in", "c out"]


async def test_other_keys_are_not_blocked_by_a_held_one() -> None:
    locks = KeyedLocks()
    release = asyncio.Event()

    async def hold_a() -> None:
        async with locks.hold("a"):
            await release.wait()

    holder = asyncio.create_task(hold_a())
    await asyncio.sleep(0)
    async with asyncio.timeout(1):
        async with locks.hold("b"):
            assert locks.users("a") == 1
            assert locks.users("b") == 1
            assert len(locks) == 2
    release.set()
    await holder
    assert len(locks) == 0


async def test_counts_waiters_and_forgets_a_key_once_idle() -> None:
    locks = KeyedLocks()
    entered = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("k"):
            entered.set()
            await release.wait()

    async def waiter() -> None:
        async with locks.hold("k"):
            pass

    held = asyncio.create_task(holder())
    await entered.wait()
    waiting = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    assert locks.users("k") == 2
    release.set()
    await asyncio.gather(held, waiting)
    assert locks.users("k") == 0
    assert len(locks) == 0


async def test_an_error_in_the_block_releases_and_forgets_the_key() -> None:
    locks = KeyedLocks()
    with pytest.raises(RuntimeError, match="boom"):
        async with locks.hold("k"):
            raise RuntimeError("boom")
    assert len(locks) == 0
    async with asyncio.timeout(1), locks.hold("k"):
        assert locks.users("k") == 1


async def test_a_cancelled_waiter_leaves_no_count_behind() -> None:
    locks = KeyedLocks()
    entered = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("k"):
            entered.set()
            await release.wait()

    async def waiter() -> None:
        async with locks.hold("k"):
            raise AssertionError("a cancelled waiter never enters")

    held = asyncio.create_task(holder())
    await entered.wait()
    waiting = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    assert locks.users("k") == 2
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert locks.users("k") == 1
    release.set()
    await held
    assert len(locks) == 0
