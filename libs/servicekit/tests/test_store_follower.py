# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""Two instances of one service on one store: the lifecycle makes each one's read models follow
what the other saves, and stops following before the store closes (issue 17, item 2)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.domain import event
from service_under_test import fresh_event_stream, start_test_service

from eventstore import ClipyardAggregate, ServiceApplication
from servicekit import ServiceRuntime
from servicekit.access import NotVisibleError

pytestmark = pytest.mark.integration


class Memo(ClipyardAggregate):
    @event("Written")
    def __init__(self, text: str) -> None:
        self.text = text


class Memos(ServiceApplication):
    """Memo texts by id."""

    def init_read_models(self) -> None:
        self.memos: dict[str, str] = {}

    def project(self, domain_event: Any) -> None:
        if isinstance(domain_event, Memo.Written):
            self.memos[str(domain_event.originator_id)] = domain_event.text

    def read_models(self) -> dict[str, Any]:
        return {"memos": self.memos}

    def write(self, text: str) -> UUID:
        memo = Memo(text=text)
        self.save(memo)
        return memo.id


async def _start(stack: AsyncExitStack, home: Path, nats_url: str) -> ServiceRuntime:
    return await start_test_service(stack, home, nats_url, "memos", Memos)


async def _seen(runtime: ServiceRuntime, memo_id: UUID, timeout: float = 3.0) -> float:
    started = time.perf_counter()
    while str(memo_id) not in await runtime.store(lambda: dict(runtime.app.memos)):
        if time.perf_counter() - started > timeout:
            pytest.fail(f"{memo_id} not seen by the other instance within {timeout} s")
        await asyncio.sleep(0.005)
    return time.perf_counter() - started


def _followers() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("store-follower")]


@pytest.fixture
async def replicas(
    tmp_path: Path, nats_server: Any
) -> AsyncIterator[tuple[ServiceRuntime, ServiceRuntime]]:
    """Two running instances of one service on one SQLite store."""
    await fresh_event_stream(nats_server.url)
    async with AsyncExitStack() as first, AsyncExitStack() as second:
        yield (
            await _start(first, tmp_path, nats_server.url),
            await _start(second, tmp_path, nats_server.url),
        )


async def test_two_instances_of_a_service_see_each_others_writes(
    tmp_path: Path, nats_server: Any
) -> None:
    await fresh_event_stream(nats_server.url)
    async with AsyncExitStack() as first, AsyncExitStack() as second:
        a = await _start(first, tmp_path, nats_server.url)
        b = await _start(second, tmp_path, nats_server.url)
        assert len(_followers()) == 2
        delays = []
        for index in range(3):
            delays.append(await _seen(b, await a.store(a.app.write, f"from A {index}")))
            delays.append(await _seen(a, await b.store(b.app.write, f"from B {index}")))
        print(f"\nlifecycle, SQLite: max {max(delays) * 1000:.1f} ms")
        assert max(delays) < 1.0
        assert a.app.read_models() == b.app.read_models()
        assert a.app.notifications_followed >= 3
        assert b.app.notifications_followed >= 3
        await second.aclose()
        assert len(_followers()) == 1  # B's follower stopped with B
    assert not _followers()


def _memo_of(app: Memos, memo_id: str) -> str:
    """A use case's lookup: ``not_found`` when this replica has not got the memo."""
    if memo_id not in app.memos:
        raise NotVisibleError(f"no memo {memo_id}")
    return app.memos[memo_id]


async def test_a_lookup_finds_at_once_what_another_replica_saved(
    replicas: tuple[ServiceRuntime, ServiceRuntime],
) -> None:
    a, b = replicas
    for index in range(20):
        memo = str(await a.store(a.app.write, f"written on A {index}"))
        # Asked of B at once, before its follower's next poll: found, never 404.
        assert await b.store_fresh(_memo_of, b.app, memo) == f"written on A {index}"
    # Truly missing is still not found, and costs no second lookup.
    calls: list[str] = []

    def counted(app: Memos, memo_id: str) -> str:
        calls.append(memo_id)
        return _memo_of(app, memo_id)

    with pytest.raises(NotVisibleError):
        await b.store_fresh(counted, b.app, "nothing")
    assert calls == ["nothing"]


async def test_a_lookup_is_asked_again_when_the_follower_got_there_first(
    replicas: tuple[ServiceRuntime, ServiceRuntime],
) -> None:
    # The race a review found: the follower projects the memo between the failed lookup and
    # store_fresh's own reading, which then finds nothing new; the lookup must still be asked
    # again (the read models moved since it looked).
    a, b = replicas
    memo = str(await a.store(a.app.write, "raced"))
    looks = 0

    def lookup_then_follow(app: Memos, memo_id: str) -> str:
        nonlocal looks
        looks += 1
        try:
            return _memo_of(app, memo_id)
        finally:
            if looks == 1:
                while app.follow_store():  # as the follower would, right after the miss
                    pass

    assert await b.store_fresh(lookup_then_follow, b.app, memo) == "raced"
    assert looks == 2


async def test_follow_brings_every_earlier_write_of_another_replica(
    replicas: tuple[ServiceRuntime, ServiceRuntime],
) -> None:
    a, b = replicas
    written = [str(await a.store(a.app.write, f"m{i}")) for i in range(30)]
    await b.follow()
    known = await b.store(lambda: dict(b.app.memos))
    assert set(written) <= set(known)
