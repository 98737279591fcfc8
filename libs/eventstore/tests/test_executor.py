"""The store thread stops within a bound: queued calls first, then the store's close, never hanging."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from eventstore import StoreExecutor


async def test_shutdown_runs_the_queue_then_last_on_the_store_thread() -> None:
    executor = StoreExecutor(name="unit-store")
    order: list[str] = []
    threads: set[str] = set()

    def work(label: str) -> None:
        time.sleep(0.02)
        order.append(label)
        threads.add(threading.current_thread().name)

    queued = [asyncio.ensure_future(executor.run(work, str(i))) for i in range(5)]
    await asyncio.sleep(0)  # submitted
    assert await executor.shutdown(2.0, last=lambda: work("close"))
    await asyncio.gather(*queued)
    # The store closes after every call queued before, on the same thread.
    assert order == ["0", "1", "2", "3", "4", "close"]
    assert threads == {"unit-store"}
    with pytest.raises(RuntimeError, match="closed"):
        await executor.run(work, "late")


async def test_shutdown_is_bounded_while_a_call_is_stuck() -> None:
    executor = StoreExecutor(name="stuck-store")
    release = threading.Event()
    closed = threading.Event()
    stuck = asyncio.ensure_future(executor.run(release.wait, 30))
    await asyncio.sleep(0.05)

    started = time.monotonic()
    finished = await executor.shutdown(0.3, last=closed.set)

    # It gives up on time, and the store is not closed under the running call.
    assert not finished
    assert 0.25 < time.monotonic() - started < 1.0
    assert not closed.is_set()
    # The thread is a daemon: a stuck store call cannot hold the process's exit.
    assert executor._thread is not None
    assert executor._thread.daemon
    # Once the call ends, the close still runs, after it.
    release.set()
    assert await stuck is True
    assert await asyncio.to_thread(closed.wait, 2)


async def test_a_call_cancelled_before_it_starts_is_skipped() -> None:
    executor = StoreExecutor(name="skip-store")
    release = threading.Event()
    ran: list[str] = []
    blocker = asyncio.ensure_future(executor.run(release.wait, 5))
    waiting = asyncio.ensure_future(executor.run(ran.append, "skipped"))
    await asyncio.sleep(0.05)
    waiting.cancel()
    await asyncio.sleep(0.01)  # the cancellation reaches the queued call
    release.set()
    await blocker
    await executor.run(ran.append, "ran")
    assert ran == ["ran"]
    executor.close()


async def test_shutdown_of_an_idle_executor_runs_last_at_once() -> None:
    executor = StoreExecutor(name="idle-store")
    closed: list[bool] = []
    assert await executor.shutdown(0.1, last=lambda: closed.append(True))
    assert closed == [True]
    assert executor.closed
