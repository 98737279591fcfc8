# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""Replicas on one SQLite store: each one's read models follow the whole store, within 1 s of a
write on any replica, every notification projected once, in order (issue 17, item 2)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from eventsourcing.persistence import StoredEvent
from eventstore_sample import Company, GatewayApp
from follower_replicas import (
    assert_same_as_rebuild,
    convergence,
    interleave,
    replicas,
    report,
    seen_after,
    settled,
)

from eventstore import StoreExecutor, StoreFollower, StoreSettings, build_application
from eventstore.follower import POLL_INTERVAL, follow_mode


class FragileGateway(GatewayApp):
    """The sample gateway whose projection fails on a rename to ``boom``."""

    def project(self, domain_event: Any) -> None:
        if isinstance(domain_event, Company.Renamed) and domain_event.name == "boom":
            raise RuntimeError("projection bug")
        super().project(domain_event)


@pytest.fixture
def settings(tmp_path: Path) -> StoreSettings:
    return StoreSettings(kind="sqlite", home=tmp_path / "home")


async def test_a_save_on_one_replica_reaches_the_other_within_a_second(
    settings: StoreSettings,
) -> None:
    async with replicas(settings) as (a, b):
        assert a.follower.mode == b.follower.mode == "poll"
        assert a.follower.poll_interval == POLL_INTERVAL
        delays = await convergence(a, b, 6, prefix="AB") + await convergence(b, a, 6, prefix="BA")
        median = report("SQLite, polling every 0.2 s", delays)
        assert max(delays) < 1.0
        assert median < 0.5
        # B projected A's saves by following, A projected its own when it saved them.
        assert b.follower.followed >= 6
        assert a.follower.followed >= 6


async def test_a_change_on_either_replica_is_seen_by_both(settings: StoreSettings) -> None:
    async with replicas(settings) as (a, b):
        company_id = await a.run(a.app.create_company, "Acme", "ACME")
        await seen_after(b, company_id)
        await b.run(b.app.rename, company_id, "Acme Corp")
        await b.run(b.app.tick, company_id, 3)
        await settled([a, b])
        for replica in (a, b):
            row = await replica.run(lambda r=replica: dict(r.app.companies[str(company_id)]))
            assert row == {"name": "Acme Corp", "prefix": "ACME", "ticks": 3}, replica.name


async def test_interleaved_saves_are_projected_once_each_in_order(settings: StoreSettings) -> None:
    async with replicas(settings) as pair:
        await interleave(pair, 200)
        last = await settled(pair)
        for replica in pair:
            app = replica.app
            # SQLite ids have no gaps: each id projected exactly once, by one path or the other.
            assert (app.projected_upto, app.notifications_projected) == (last, last), replica.name
            assert app.projection_failures == 0
            assert 0 < app.notifications_followed < last
            await assert_same_as_rebuild(replica, settings)
        assert pair[0].app.read_models() == pair[1].app.read_models()


async def test_a_followed_event_that_fails_to_project_is_counted_and_passed(
    settings: StoreSettings, caplog: pytest.LogCaptureFixture
) -> None:
    async with replicas(settings, cls=FragileGateway) as (a, b):
        company_id = await a.run(a.app.create_company, "Acme", "ACME")
        await seen_after(b, company_id)
        with caplog.at_level(logging.ERROR, logger="eventstore.application"):
            await a.run(a.app.rename, company_id, "boom")
            await a.run(a.app.tick, company_id, 1)
            last = await settled([a, b])
        assert (a.app.projection_failures, b.app.projection_failures) == (1, 1)
        assert b.app.projected_upto == last
        assert b.app.companies[str(company_id)]["ticks"] == 1  # the next event still projected
        failures = [r for r in caplog.records if r.getMessage() == "read-model projection failed"]
        assert {r.notification_id for r in failures} == {last - 1}  # type: ignore[attr-defined]


async def test_an_event_this_build_cannot_read_is_counted_and_passed(
    settings: StoreSettings,
) -> None:
    async with replicas(settings) as (a, b):
        # As a newer replica would save it: a topic this build does not know.
        unknown = StoredEvent(
            originator_id=uuid4(), originator_version=1, topic="newer.module:Gone", state=b"{}"
        )
        await a.run(a.app.recorder.insert_events, [unknown])
        company_id = await a.run(a.app.create_company, "Acme", "ACME")
        last = await settled([a, b])
        for replica in (a, b):
            assert replica.app.projection_failures == 1, replica.name
            assert replica.app.projected_upto == last
            assert await replica.sees(company_id)


async def test_a_replica_far_behind_catches_up_in_batches(settings: StoreSettings) -> None:
    writer = build_application(GatewayApp, service="gateway", settings=settings)
    try:
        async with replicas(settings, count=1, batch_size=50) as (follower,):
            for index in range(7):
                company_id = writer.create_company("Co", f"F{index}")
                writer.tick(company_id, 40)
            last = writer.last_notification_id()
            await settled([follower])
            assert follower.app.projected_upto == follower.app.notifications_projected == last
            assert follower.follower.followed == last
    finally:
        writer.close()


async def test_the_follower_stops_cleanly_and_an_in_memory_store_needs_none(
    tmp_path: Path,
) -> None:
    memory = StoreSettings(kind="memory", home=tmp_path)
    executor = StoreExecutor(name="memory-store")
    app = await executor.run(build_application, GatewayApp, service="gateway", settings=memory)
    follower = StoreFollower(app, executor)
    assert follow_mode(app) == follower.mode == "none"
    await follower.start()
    assert not follower.running
    await follower.stop()
    executor.close()
    with pytest.raises(ValueError, match="PostgreSQL"):
        StoreFollower(app, executor, mode="listen")

    sqlite = StoreSettings(kind="sqlite", home=tmp_path / "home")
    async with replicas(sqlite, count=1) as (only,):
        assert only.follower.running
        follower = only.follower
    assert not follower.running
    await follower.stop()  # twice: nothing more to do
