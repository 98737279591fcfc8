"""One shutdown deadline shared by the stages: each gets its share of what remains, none more."""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack

import pytest

from servicekit.shutdown import ShutdownBudget, Stage


async def test_stages_share_the_time_left_and_a_hung_one_is_cut_off() -> None:
    budget = ShutdownBudget(2.0, reserve=0.4)
    given: dict[str, float] = {}
    ran: list[str] = []

    def stage(name: str, *, hang: bool = False, fail: bool = False) -> Stage:
        async def stop(timeout: float) -> None:
            given[name] = timeout
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
    # 1.6 s for the stages: endpoints 2/5 of it; inboxes a third of what was left; ...
    assert given["endpoints"] == pytest.approx(0.64, abs=0.02)
    assert given["inboxes"] == pytest.approx((1.6 - 0.64 - 0.2) / 3, abs=0.05)
    # ... and the stages that finish at once leave their time to the last one.
    assert given["store"] > given["inboxes"]
    # The whole stop kept to the budget less the reserve (plus the cut-off grace).
    assert elapsed < 2.0 - 0.4 + 0.25, elapsed


async def test_the_clock_starts_once() -> None:
    budget = ShutdownBudget(1.0, reserve=0.2)
    assert budget.remaining() == 1.0
    budget.start()
    await asyncio.sleep(0.1)
    budget.start()
    assert 0.8 <= budget.remaining() < 0.95
    assert budget.for_stages() == pytest.approx(budget.remaining() - 0.2, abs=0.01)
