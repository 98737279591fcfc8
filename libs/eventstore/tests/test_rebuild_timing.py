"""Rebuild 10,000 events from the store, and load a long aggregate with and without snapshots.

The measured times are printed (run with ``-s``); the assertions only bound them loosely.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import pytest
from eventstore_backends import PostgresBackend, SqliteBackend
from eventstore_sample import Company, GatewayApp

from eventstore import StoreSettings, build_application

EVENTS = 10_000


class UnsnappedGateway(GatewayApp):
    """The same application reading the same store, without using snapshots."""

    is_snapshotting_enabled = False
    snapshot_interval: ClassVar[int] = 0


def _median_ms(load: object, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        load()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)[len(times) // 2]


class RebuildTiming:
    def test_rebuild_10000_events_and_snapshot_loads(
        self, settings: StoreSettings, tmp_path: Path
    ) -> None:
        app = build_application(GatewayApp, service="gateway", settings=settings)
        started = time.perf_counter()
        company_id = app.create_company("Acme", "ACME")
        for _ in range(9):
            app.tick(company_id, (EVENTS - 1) // 9)  # 1,111 events per save
        write_s = time.perf_counter() - started
        assert app.last_notification_id() == EVENTS
        app.close()

        fresh = build_application(GatewayApp, service="gateway", settings=settings)
        try:
            assert fresh.notifications_projected == EVENTS
            assert fresh.companies[str(company_id)]["ticks"] == EVENTS - 1
            with_snapshot = _median_ms(lambda: fresh.repository.get(company_id))
            loaded: Company = fresh.repository.get(company_id)
            assert loaded.version == EVENTS
        finally:
            fresh.close()
        plain = build_application(UnsnappedGateway, service="gateway", settings=settings)
        try:
            assert plain.snapshots is None
            without_snapshot = _median_ms(lambda: plain.repository.get(company_id), repeat=3)
        finally:
            plain.close()
        print(
            f"\n[{settings.kind}] wrote {EVENTS} events in {write_s:.2f} s; "
            f"read-model rebuild {fresh.rebuild_duration_ms:.0f} ms "
            f"({fresh.rebuild_duration_ms * 1000 / EVENTS:.1f} us/event); "
            f"aggregate of {EVENTS} events: {without_snapshot:.1f} ms without snapshot, "
            f"{with_snapshot:.2f} ms with one"
        )
        assert fresh.rebuild_duration_ms < 30_000
        assert with_snapshot * 5 < without_snapshot


class TestSqliteRebuild(SqliteBackend, RebuildTiming):
    pass


@pytest.mark.integration
class TestPostgresRebuild(PostgresBackend, RebuildTiming):
    pass
