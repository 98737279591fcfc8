"""One shutdown deadline shared by the stages: each gets its share of what remains, none more."""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack

import pytest

from servicekit.shutdown import ShutdownBudget, Stage


async def test_stages_share_the_time_left_and_a_hung_one_is_cut_off() -> None:
    budget = ShutdownBudget(3.0, reserve=0.6)
    given: dict[str, float] = {}
    left: dict[str, float] = {}
    ran: list[str] = []

    def stage(name: str, *, hang: bool = False, fail: bool = False) -> Stage:
        async def stop(timeout: float) -> None:
            given[name] = timeout
            left[name] = budget.for_stages()  # what the stages had left as this one began
            ran.append(name)
            if fail:
                raise RuntimeError(f"{name} broke")
            if hang:
                await asyncio.sleep(60)  # ignores its timeout

        return stop

    started = time.monotonic()
    async with AsyncExitStack() as stack:
        budget.push(stack, "store", stage("store"))
        budget.push(stack, "relay", stage("relay", fail=True))
        budget.push(stack, "inboxes", stage("inboxes", hang=True))
        budget.push(stack, "endpoints", stage("endpoints", hang=True), weight=2.0)
    elapsed = time.monotonic() - started

    # Last registered, first run; a failing or hung stage does not stop the others.
    assert ran == ["endpoints", "inboxes", "relay", "store"]
    # 2.4 s for the stages: endpoints 2/5 of it (as the first, it ran at once).
    assert given["endpoints"] == pytest.approx(0.96, abs=0.05)
    # Each later stage gets its weight's share of what is left when it runs (however busy the
    # machine, "left" is read as the stage starts): inboxes a third, relay a half, store all.
    assert given["inboxes"] == pytest.approx(left["inboxes"] / 3, abs=0.03)
    assert given["relay"] == pytest.approx(left["relay"] / 2, abs=0.03)
    assert given["store"] == pytest.approx(left["store"], abs=0.03)
    # What is left excludes what the hung endpoints took: their share plus the cut-off grace at
    # least (more only on a busy machine), and not the whole budget: they were cut off.
    assert 0.2 < given["inboxes"] <= (2.4 - 0.96 - 0.2) / 3 + 0.001
    # ... and a stage that finishes at once leaves its time to the last one: the store gets the
    # relay's unused half as well as its own.
    assert given["relay"] > 0.1
    assert given["store"] == pytest.approx(2 * given["relay"], abs=0.03)
    # The whole stop kept to the budget less the reserve (plus the cut-off grace).
    assert elapsed < 3.0 - 0.6 + 0.25, elapsed


async def test_the_clock_starts_once() -> None:
    budget = ShutdownBudget(1.0, reserve=0.2)
    assert budget.remaining() == 1.0
    before = time.monotonic()
    budget.start()
    await asyncio.sleep(0.1)
    budget.start()  # the clock keeps its first start
    remaining = budget.remaining()
    after = time.monotonic()
    # At least the 0.1 s slept is gone, and no more than passed since the first start.
    assert 1.0 - (after - before) <= remaining <= 0.9 + 0.001
    # The stages' time is what remains less the reserve.
    first = budget.remaining()
    for_stages = budget.for_stages()
    last = budget.remaining()
    assert last - 0.2 <= for_stages <= first - 0.2
