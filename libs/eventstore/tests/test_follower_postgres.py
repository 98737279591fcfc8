"""Replicas on one PostgreSQL store: woken by NOTIFY (sent in each insert's transaction), polling
when a notification is lost, reconnecting a listener whose connection was killed (issue 17,
item 2)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError
from eventstore_sample import GatewayApp
from follower_replicas import (
    Replica,
    assert_same_as_rebuild,
    convergence,
    interleave,
    replicas,
    report,
    seen_after,
    settled,
)

from eventstore import StoreSettings, build_application
from eventstore.pg_listen import StoreChannelRecorder

pytestmark = pytest.mark.integration

NO_POLL = 30.0
"""A poll interval no test waits for: what converges was woken by a NOTIFY (or a reconnection)."""


@pytest.fixture
def settings(tmp_path: Path, pg_database: str) -> StoreSettings:
    return StoreSettings(kind="postgres", home=tmp_path / "home", postgres_dsn=pg_database)


async def wait_for(check: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.01)


async def listening(*pair: Replica) -> None:
    for replica in pair:
        listener = replica.follower.listener
        assert listener is not None
        await wait_for(lambda li=listener: li.connected, f"{replica.name} listening")


async def test_notify_wakes_the_other_replica_well_within_a_second(
    settings: StoreSettings,
) -> None:
    async with replicas(settings, poll_interval=NO_POLL) as (a, b):
        assert a.follower.mode == b.follower.mode == "listen"
        await listening(a, b)
        delays = await convergence(a, b, 8, prefix="AB") + await convergence(b, a, 8, prefix="BA")
        median = report("PostgreSQL, woken by NOTIFY", delays)
        assert median < 0.5
        assert max(delays) < 1.0
        listener = b.follower.listener
        assert listener is not None
        assert listener.notifications >= 8


async def test_the_channel_is_the_stores_own(settings: StoreSettings) -> None:
    async with replicas(settings, poll_interval=NO_POLL) as (a, b):
        assert isinstance(a.app.recorder, StoreChannelRecorder)
        listener = b.follower.listener
        assert listener is not None
        assert listener.channel == "clipyard_gateway_store_events"
        await listening(a, b)
        # Another service's store in the same database: its saves wake nobody here.
        other = build_application(GatewayApp, service="controller", settings=settings)
        try:
            before = listener.notifications
            for index in range(3):
                other.create_company("Other", f"O{index}")
            await asyncio.sleep(0.3)
            assert listener.notifications == before
        finally:
            other.close()
        company_id = await a.run(a.app.create_company, "Acme", "ACME")
        assert await seen_after(b, company_id) < 1.0
        assert listener.notifications > before


async def test_a_lost_notify_is_made_up_by_the_poll(
    settings: StoreSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replicas(settings) as (a, b):
        await listening(a, b)
        listener = b.follower.listener
        assert listener is not None
        # The NOTIFY is left out of the library's transaction, which every save of ``a`` takes
        # (its one-statement insert function sends it from the database).
        monkeypatch.setattr(a.app.recorder, "_one_statement", False)
        monkeypatch.setattr(a.app.recorder, "_notify_channel", lambda _cursor: None)
        before = listener.notifications
        delays = await convergence(a, b, 4, prefix="LOST")
        report("PostgreSQL, NOTIFY lost, polling every 0.5 s", delays)
        assert max(delays) < 1.0
        assert listener.notifications == before  # nothing woke it but the poll


async def test_a_killed_listener_reconnects_and_nothing_is_missed_meanwhile(
    settings: StoreSettings, pg_database: str
) -> None:
    async with replicas(settings, poll_interval=NO_POLL) as (a, b):
        await listening(a, b)
        listener = b.follower.listener
        assert listener is not None
        killed = listener.backend_pid
        with psycopg.connect(pg_database, autocommit=True) as admin:
            row = admin.execute(
                "SELECT query FROM pg_stat_activity WHERE pid = %s", (killed,)
            ).fetchone()
            assert row is not None
            assert "LISTEN" in row[0]
            admin.execute("SELECT pg_terminate_backend(%s)", (killed,))
        # Written while the listener is down: the follower polls (0.2 s) until it is back.
        company_id = await a.run(a.app.create_company, "During", "DURING")
        during = await seen_after(b, company_id)
        print(f"\nPostgreSQL, listener killed: seen after {during * 1000:.1f} ms")
        assert during < 1.0
        await wait_for(lambda: listener.connected and listener.connects == 2, "reconnection")
        assert listener.backend_pid not in (None, killed)
        assert listener.drops >= 1
        # NOTIFY wakes it again (polling every 30 s would not).
        delays = await convergence(a, b, 4, prefix="AFTER")
        report("PostgreSQL, after the listener reconnected", delays)
        assert max(delays) < 0.5


async def test_interleaved_saves_end_identical_to_a_rebuild(settings: StoreSettings) -> None:
    async with replicas(settings) as pair:
        await interleave(pair, 200)
        last = await settled(pair)
        for replica in pair:
            app = replica.app
            assert app.projected_upto == last
            assert app.notifications_projected == last  # no rolled-back save: no gap in ids
            assert app.projection_failures == 0
            await assert_same_as_rebuild(replica, settings)
        assert pair[0].app.read_models() == pair[1].app.read_models()


async def test_a_rolled_back_id_is_passed_over(settings: StoreSettings) -> None:
    async with replicas(settings, poll_interval=NO_POLL) as (a, b):
        await listening(a, b)
        company_id = await a.run(a.app.create_company, "Acme", "ACME")
        await seen_after(b, company_id)
        # A conflicting save on B takes an id from the sequence, then rolls back: a gap.
        stale = await b.run(b.app.repository.get, company_id)
        await a.run(a.app.rename, company_id, "Acme Corp")
        stale.rename("Lost")
        with pytest.raises(IntegrityError):
            await b.run(b.app.save, stale)
        await a.run(a.app.tick, company_id, 1)
        last = await settled([a, b])
        assert await b.sees(company_id, "Acme Corp")
        assert b.app.projected_upto == a.app.projected_upto == last
        assert b.app.notifications_projected == a.app.notifications_projected == last - 1
        await assert_same_as_rebuild(b, settings)
