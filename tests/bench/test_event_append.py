"""Event append through a service's store path vs a raw insert, on PostgreSQL and on SQLite.

Ours: one command on an aggregate saved by a ``ServiceApplication`` (process recorder, cause and
trace stamped, read models projected, relay woken), called from async code through the store's
thread, exactly as a service does. Limit: one row inserted and committed by the raw driver.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from eventsourcing.domain import event

from contracts.base import Actor
from eventstore import (
    Cause,
    ClipyardAggregate,
    ServiceApplication,
    StoreExecutor,
    StoreSettings,
    acting,
    build_application,
)

pytestmark = [pytest.mark.bench, pytest.mark.integration]

OPS = 300
CAUSE = Cause(actor=Actor(type="system", id="bench"), reason="benchmark")


class Counter(ClipyardAggregate):
    @event("Created")
    def __init__(self) -> None:
        self.count = 0

    @event("Incremented")
    def increment(self, by: int) -> None:
        self.count += by


class CounterApplication(ServiceApplication):
    """The store path of a service, with no read models of its own."""


async def _compare(
    name: str, app: CounterApplication, raw_insert: Any, limit: str, bench_report: Any
) -> None:
    from bench_harness import Comparison, measure_async

    executor = StoreExecutor("bench-store")
    counter = Counter()
    app.save(counter)

    def save_one() -> None:
        with acting(CAUSE):
            counter.increment(1)
            app.save(counter)

    async def ours() -> None:
        for _ in range(OPS):
            await executor.run(save_one)

    async def raw() -> None:
        for _ in range(OPS):
            raw_insert()

    medians = await measure_async({"ours": ours, "limit": raw}, ops=OPS)
    executor.close()
    bench_report.add(
        Comparison(
            name=name,
            ours="ServiceApplication.save of one event via the store thread",
            limit=limit,
            ours_us=medians["ours"],
            limit_us=medians["limit"],
            rounds=5,
            ops_per_round=OPS,
            goal_ratio=2.0,
            goal=">= 0.5x appends/s",
        )
    )


async def test_postgres_append_vs_raw_psycopg_insert(
    durable_pg_database: str, bench_report: Any
) -> None:
    pg_database = durable_pg_database
    app = build_application(
        CounterApplication,
        service="bench",
        settings=StoreSettings(kind="postgres", home=Path("/tmp"), postgres_dsn=pg_database),
    )
    conn = psycopg.connect(pg_database, autocommit=True)
    conn.execute(
        "CREATE TABLE bench_events (position bigserial PRIMARY KEY, stream_id uuid, "
        "version bigint, type text, data bytea, UNIQUE (stream_id, version))"
    )
    stream, version, data = uuid.uuid4(), [0], b"x" * 200

    def raw_insert() -> None:
        version[0] += 1
        conn.execute(
            "INSERT INTO bench_events (stream_id, version, type, data) VALUES (%s, %s, %s, %s)",
            (stream, version[0], "Incremented", data),
        )

    try:
        await _compare(
            "event append (PostgreSQL)",
            app,
            raw_insert,
            "raw psycopg INSERT, autocommit",
            bench_report,
        )
    finally:
        conn.close()
        app.close()


async def test_sqlite_append_vs_raw_sqlite_insert(tmp_path: Path, bench_report: Any) -> None:
    app = build_application(
        CounterApplication, service="bench", settings=StoreSettings(kind="sqlite", home=tmp_path)
    )
    conn = sqlite3.connect(tmp_path / "raw.sqlite", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE bench_events (position INTEGER PRIMARY KEY AUTOINCREMENT, stream_id TEXT, "
        "version INTEGER, type TEXT, data BLOB, UNIQUE (stream_id, version))"
    )
    stream, version, data = str(uuid.uuid4()), [0], b"x" * 200

    def raw_insert() -> None:
        version[0] += 1
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO bench_events (stream_id, version, type, data) VALUES (?, ?, ?, ?)",
            (stream, version[0], "Incremented", data),
        )
        conn.execute("COMMIT")

    try:
        await _compare(
            "event append (SQLite)",
            app,
            raw_insert,
            "raw sqlite3 INSERT + COMMIT, WAL",
            bench_report,
        )
    finally:
        conn.close()
        app.close()
