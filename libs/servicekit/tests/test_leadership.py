"""Singleton work under a lease (servicekit.leadership) on a real store: one leader at a time,
handover when it stops or dies, and a paused leader that can no longer write."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from eventsourcing.persistence import Tracking

from eventstore import ServiceApplication, StoreSettings, build_application
from eventstore.fence import StaleFenceError
from servicekit.leadership import Leadership

TTL = 0.6


class Ledger(ServiceApplication):
    """A store whose singleton work records a position (a tracking row) each round."""


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Ledger]:
    application = build_application(
        Ledger, service="ledger", settings=StoreSettings(kind="sqlite", home=tmp_path)
    )
    yield application
    application.close()


class Recorder:
    """Singleton work: records the next position every 50 ms; notes each write and refusal."""

    def __init__(self, app: Ledger, name: str) -> None:
        self.app = app
        self.name = name
        self.written: list[int] = []
        self.refused: list[str] = []

    async def run(self) -> None:
        while True:
            position = (self.app.position("rounds") or 0) + 1
            try:
                await asyncio.to_thread(
                    self.app.recorder.insert_tracking, Tracking("rounds", position)
                )
            except StaleFenceError as error:
                self.refused.append(str(error))
            else:
                self.written.append(position)
            await asyncio.sleep(0.05)


def leadership(app: Ledger, holder: str, work: Recorder, **kwargs: object) -> Leadership:
    lead = Leadership(app.lease_table, service="ledger", holder=holder, ttl=TTL, **kwargs)  # type: ignore[arg-type]
    lead.add_task(f"record:{holder}", work.run)
    return lead


async def until(check: Callable[[], bool], timeout: float) -> float:
    loop = asyncio.get_running_loop()
    began = loop.time()
    while not check():
        assert loop.time() - began < timeout, "not within the time allowed"
        await asyncio.sleep(0.02)
    return loop.time() - began


async def test_one_leader_and_handover_when_it_stops(app: Ledger) -> None:
    a_work, b_work = Recorder(app, "a"), Recorder(app, "b")
    a, b = leadership(app, "a", a_work), leadership(app, "b", b_work)
    await a.start()
    await b.start()
    try:
        assert (a.role, b.role) == ("leader", "standby")
        await until(lambda: len(a_work.written) >= 3, 5)
        assert b_work.written == []
        await a.stop(1.0)  # releases the lease: b takes it at its next try
        took = await until(lambda: b.held, 5)
        assert took < TTL / 3 + 0.5
        await until(lambda: len(b_work.written) >= 2, 5)
        assert b.fence is not None
        assert b.fence.token == 2
        assert a_work.refused == b_work.refused == []
        # Every round a position: none written twice or skipped, across the handover.
        assert sorted(a_work.written + b_work.written) == list(
            range(1, len(a_work.written) + len(b_work.written) + 1)
        )
    finally:
        await b.stop(1.0)


async def test_a_paused_leader_is_replaced_and_cannot_write_after(app: Ledger) -> None:
    a_work, b_work = Recorder(app, "a"), Recorder(app, "b")
    a, b = leadership(app, "a", a_work), leadership(app, "b", b_work)
    await a.start()
    await b.start()
    try:
        await until(lambda: len(a_work.written) >= 2, 5)
        # "a" stops renewing (as a process stopped by SIGSTOP would) while its work goes on.
        assert a._task is not None
        a._task.cancel()
        took = await until(lambda: b.held, 5)
        assert took < 2 * TTL
        await until(lambda: bool(a_work.refused), 5)  # a's writes are refused from now on
        assert "no longer held by a with token 1" in a_work.refused[0]
        # a's next beat finds the lease gone and stops its work.
        await a._beat()
        assert not a.held
        refused = len(a_work.refused)
        await asyncio.sleep(0.2)
        assert len(a_work.refused) == refused
        assert sorted(a_work.written + b_work.written) == list(
            range(1, len(a_work.written) + len(b_work.written) + 1)
        )
    finally:
        await a.stop(0.5)
        await b.stop(0.5)


async def test_a_starting_instance_takes_over_from_a_holder_gone_from_the_bus(app: Ledger) -> None:
    gone = app.lease_table.acquire_lease("singleton", "crashed", 60_000)  # it died holding it
    assert gone == 1

    async def alive(instance: str) -> bool:
        return instance != "crashed"

    work = Recorder(app, "c")
    c = leadership(app, "c", work, alive=alive)
    await c.start()
    try:
        assert c.held
        assert c.fence is not None
        assert c.fence.token == 2
        assert c.describe()["role"] == "leader"
    finally:
        await c.stop(0.5)


async def test_a_live_holder_is_not_taken_over(app: Ledger) -> None:
    app.lease_table.acquire_lease("singleton", "busy", 60_000)

    async def alive(instance: str) -> bool:
        return True

    c = leadership(app, "c", Recorder(app, "c"), alive=alive)
    await c.start()
    try:
        assert not c.held
        assert c.leader == "busy"
    finally:
        await c.stop(0.5)


class Starts:
    """A work that counts its starts and stops, optionally slow or failing to start."""

    def __init__(self, delay: float = 0.0, fail: bool = False) -> None:
        self.delay, self.fail = delay, fail
        self.starts = self.stops = 0

    async def start(self) -> None:
        await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError("cannot start")
        self.starts += 1

    async def stop(self, timeout: float) -> None:
        self.stops += 1


async def test_the_work_runs_again_when_the_lease_comes_back(app: Ledger) -> None:
    work = Starts()
    a = Leadership(app.lease_table, service="ledger", holder="a", ttl=TTL)
    a.add("counted", work)
    await a.start()
    try:
        await until(lambda: work.starts == 1, 5)
        assert a._task is not None
        a._task.cancel()  # paused: "b" takes the lease, then gives it back
        await until(lambda: app.lease_table.acquire_lease("singleton", "b", 60_000) == 2, 5)
        await a._beat()
        assert (a.held, work.stops) == (False, 1)
        assert app.lease_table.release_lease("singleton", "b", 2)
        await a._beat()
        await until(lambda: work.starts == 2, 5)
        assert a.fence is not None
        assert a.fence.token == 3
    finally:
        await a.stop(0.5)


async def test_a_slow_start_does_not_keep_the_lease_from_being_renewed(app: Ledger) -> None:
    work = Starts(delay=3 * TTL)
    a = Leadership(app.lease_table, service="ledger", holder="a", ttl=TTL)
    a.add("slow", work)
    await a.start()
    try:
        await until(lambda: work.starts == 1, 10)
        assert a.fence is not None
        assert (a.grants, a.fence.token) == (1, 1)  # renewed all along: never lost, never re-won
    finally:
        await a.stop(0.5)


async def test_a_work_that_cannot_start_gives_the_lease_to_another(app: Ledger) -> None:
    a = Leadership(app.lease_table, service="ledger", holder="a", ttl=TTL)
    a.add("broken", Starts(fail=True))
    b_work = Starts()
    b = Leadership(app.lease_table, service="ledger", holder="b", ttl=TTL)
    b.add("fine", b_work)
    await a.start()
    await b.start()
    try:
        await until(lambda: b_work.starts == 1, 10)
        assert b.held
    finally:
        await a.stop(0.5)
        await b.stop(0.5)
