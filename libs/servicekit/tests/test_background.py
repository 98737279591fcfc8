"""Background tasks: kept until they end, failures logged, cancelled together at a stop."""

from __future__ import annotations

import asyncio
import logging

import pytest

from servicekit.background import BackgroundTasks


async def test_a_failure_is_logged_and_the_rest_are_cancelled_at_the_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = BackgroundTasks()
    gate = asyncio.Event()

    async def fails() -> None:
        raise RuntimeError("boom")

    async def waits() -> None:
        await gate.wait()

    failing = tasks.spawn(fails(), "fails")
    waiting = tasks.spawn(waits(), "waits")
    with caplog.at_level(logging.ERROR, logger="servicekit.background"):
        await asyncio.wait([failing])
        await asyncio.sleep(0)
    assert "background task fails failed" in caplog.text
    assert tasks.busy == 1
    await tasks.cancel_all(timeout=1)
    assert waiting.cancelled()
    assert tasks.busy == 0


async def test_idle_waits_for_the_running_ones() -> None:
    tasks = BackgroundTasks()
    done: list[str] = []

    async def work() -> None:
        await asyncio.sleep(0.05)
        done.append("work")

    tasks.spawn(work(), "work")
    await tasks.idle(timeout=5)
    assert done == ["work"]
    assert tasks.busy == 0
