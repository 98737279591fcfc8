"""A plain save on PostgreSQL is one call of the store's insert function (eventstore.pg_insert):
it still takes the events table's lock, so notification ids commit in the order they were issued;
it refuses a version already recorded with nothing saved; fenced saves are still checked."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from uuid import UUID

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError
from eventstore_sample import Company, GatewayApp

from eventstore import StoreSettings, build_application
from eventstore.fence import Fence, StaleFenceError, fenced

pytestmark = pytest.mark.integration


@pytest.fixture
def settings(tmp_path: Path, pg_database: str) -> StoreSettings:
    return StoreSettings(kind="postgres", home=tmp_path / "home", postgres_dsn=pg_database)


def _schema_and_table(app: GatewayApp) -> tuple[str, str]:
    recorder = app.recorder
    return recorder.datastore.schema, recorder.events_table_name  # type: ignore[attr-defined]


def test_the_store_creates_its_insert_function_in_its_schema(
    settings: StoreSettings, pg_database: str
) -> None:
    app = build_application(GatewayApp, service="gateway", settings=settings)
    try:
        schema, _ = _schema_and_table(app)
        with psycopg.connect(pg_database) as db:
            found = db.execute(
                "SELECT n.nspname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE p.proname = 'clipyard_insert_events'"
            ).fetchall()
        assert [row[0] for row in found] == [schema]
    finally:
        app.close()


def test_concurrent_replicas_commit_ids_in_order_without_gaps(settings: StoreSettings) -> None:
    apps = [build_application(GatewayApp, service="gateway", settings=settings) for _ in range(2)]
    try:
        errors: list[BaseException] = []

        def write(app: GatewayApp, index: int) -> None:
            try:
                for n in range(40):
                    app.create_company(f"C{index}-{n}", f"C{index}{n}")
            except BaseException as error:  # reported below
                errors.append(error)

        threads = [threading.Thread(target=write, args=(apps[i % 2], i)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        notifications = apps[0].recorder.select_notifications(start=1, limit=1000)
        assert [n.id for n in notifications] == list(range(1, 161))
    finally:
        for app in apps:
            app.close()


def test_a_save_waits_for_the_events_tables_lock(settings: StoreSettings, pg_database: str) -> None:
    # Another transaction is writing to the events table (ROW EXCLUSIVE, what a plain INSERT
    # takes, which would not wait for it): the save waits until it ends, as the library's
    # transaction did. That lock is what keeps ids committing in the order they were issued.
    app = build_application(GatewayApp, service="gateway", settings=settings)
    try:
        schema, table = _schema_and_table(app)
        done = threading.Event()
        with psycopg.connect(pg_database) as holder:
            holder.execute(f'LOCK TABLE "{schema}"."{table}" IN ROW EXCLUSIVE MODE')
            saving = threading.Thread(
                target=lambda: (app.create_company("Acme", "ACME"), done.set())
            )
            saving.start()
            time.sleep(0.5)
            assert not done.is_set(), "the save did not wait for the table's lock"
        saving.join(10)
        assert done.is_set()
    finally:
        app.close()


def test_a_version_already_recorded_is_refused_with_nothing_saved(
    settings: StoreSettings,
) -> None:
    first = build_application(GatewayApp, service="gateway", settings=settings)
    second = build_application(GatewayApp, service="gateway", settings=settings)
    try:
        company_id: UUID = first.create_company("Acme", "ACME")
        theirs: Company = second.repository.get(company_id)
        first.rename(company_id, "Acme Corp")  # version 2, saved first
        theirs.rename("Acme Inc")
        before = first.recorder.max_notification_id()
        with pytest.raises(IntegrityError):
            second.save(theirs)
        assert first.recorder.max_notification_id() == before
        assert first.repository.get(company_id).name == "Acme Corp"
    finally:
        first.close()
        second.close()


def test_a_fenced_save_with_a_lease_that_moved_on_is_still_refused(
    settings: StoreSettings,
) -> None:
    app = build_application(GatewayApp, service="gateway", settings=settings)
    try:
        token = app.recorder.acquire_lease("singleton", "a", 60_000)  # type: ignore[attr-defined]
        assert token is not None
        taken = app.recorder.take_over_lease("singleton", "b", 60_000, token)  # type: ignore[attr-defined]
        assert taken == token + 1
        before = app.recorder.max_notification_id()
        with fenced(Fence("singleton", "a", token)), pytest.raises(StaleFenceError):
            app.create_company("Acme", "ACME")
        assert app.recorder.max_notification_id() == before
    finally:
        app.close()


def test_a_save_after_the_function_was_dropped_takes_the_transaction(
    settings: StoreSettings, pg_database: str
) -> None:
    app = build_application(GatewayApp, service="gateway", settings=settings)
    try:
        schema, _ = _schema_and_table(app)
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute(f'DROP FUNCTION "{schema}".clipyard_insert_events')
        company_id = app.create_company("Acme", "ACME")  # the call fails: nothing saved, retried
        app.rename(company_id, "Acme Corp")
        assert app.repository.get(company_id).name == "Acme Corp"
        assert app.recorder.max_notification_id() == 2
    finally:
        app.close()
