# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""Store behaviour, one abstract test class run against every backend (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg
import pytest
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError, Tracking
from eventstore_sample import ADMIN, Company, CompanyCopy, GatewayApp, MirrorApp
from opentelemetry.sdk.trace import TracerProvider

from eventstore import (
    OUTBOX_TRACKING,
    Cause,
    ServiceApplication,
    StoreSettings,
    acting,
    audit_trail,
    build_application,
    verify_replay,
)

TRACER = TracerProvider().get_tracer("eventstore-tests")


class SnappyGateway(GatewayApp):
    """The sample gateway with a snapshot every 10 versions."""

    snapshot_interval = 10


class StoreBehaviour:
    """What every backend must do; subclasses provide ``settings``."""

    @pytest.fixture
    def settings(self, tmp_path: Path) -> StoreSettings:
        raise NotImplementedError

    @pytest.fixture
    def app(self, settings: StoreSettings) -> Iterator[GatewayApp]:
        application = build_application(GatewayApp, service="gateway", settings=settings)
        try:
            yield application
        finally:
            application.close()

    def test_events_carry_cause_and_trace(self, app: GatewayApp) -> None:
        # An admin creates a company inside a traced request.
        cause = Cause(actor=ADMIN, run_id="run-7", reason="onboarding", company_id="c1")
        with TRACER.start_as_current_span("request") as span, acting(cause):
            company_id = app.create_company("Acme", "ACME")
        context = span.get_span_context()
        traceparent = f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
        # Outside any cause, a rename records no actor and no trace.
        app.rename(company_id, "Acme Corp")
        # Read back from the store, not from memory.
        created, renamed = app.notification_log.select(start=1, limit=10)
        first = app.mapper.to_domain_event(created)
        assert first.actor == {"type": "admin", "id": "admin-1"}
        assert first.run_id == "run-7"
        assert first.reason == "onboarding"
        assert first.trace == {"traceparent": traceparent}
        second = app.mapper.to_domain_event(renamed)
        assert (second.actor, second.run_id, second.reason, second.trace) == (None, None, None, {})

    def test_read_models_see_each_save_and_saves_wake_listeners(self, app: GatewayApp) -> None:
        woken: list[int] = []
        app.on_saved.append(woken.append)
        company_id = app.create_company("Acme", "ACME")
        assert app.companies[str(company_id)] == {"name": "Acme", "prefix": "ACME", "ticks": 0}
        app.tick(company_id, 3)
        assert app.companies[str(company_id)]["ticks"] == 3
        assert woken == [1, 4]
        assert app.last_notification_id() == 4 == app.projected_upto

    def test_tracking_is_recorded_with_the_events_it_produced(
        self, settings: StoreSettings
    ) -> None:
        mirror = build_application(MirrorApp, service="realizer", settings=settings)
        try:
            # The copy of upstream notification 5 is saved with its position.
            copy = CompanyCopy(company_id="c1", name="Acme", issue_prefix="ACME")
            mirror.save_with_tracking(copy, tracking=Tracking("gateway", 5))
            assert mirror.has_processed("gateway", 5)
            assert mirror.has_processed("gateway", 3)
            assert not mirror.has_processed("gateway", 6)
            assert mirror.position("gateway") == 5
            # The same position again fails as a whole: no event, no read-model change.
            other = CompanyCopy(company_id="c2", name="Other", issue_prefix="OTH")
            with pytest.raises(IntegrityError):
                mirror.save_with_tracking(other, tracking=Tracking("gateway", 5))
            with pytest.raises(AggregateNotFoundError):
                mirror.repository.get(other.id)
            assert mirror.last_notification_id() == 1
            assert set(mirror.copies) == {"c1"}
            # Another upstream has its own position.
            assert not mirror.has_processed("controller", 1)
        finally:
            mirror.close()

    def test_a_failed_save_records_no_tracking(self, settings: StoreSettings) -> None:
        mirror = build_application(MirrorApp, service="realizer", settings=settings)
        try:
            copy = CompanyCopy(company_id="c1", name="Acme", issue_prefix="ACME")
            mirror.save(copy)
            # Two handlers load the same copy; the first one saves.
            first: CompanyCopy = mirror.repository.get(copy.id)
            stale: CompanyCopy = mirror.repository.get(copy.id)
            first.see_tick()
            mirror.save(first)
            # The stale one conflicts: its tracking must not be recorded.
            stale.see_tick()
            with pytest.raises(IntegrityError):
                mirror.save_with_tracking(stale, tracking=Tracking("gateway", 9))
            assert not mirror.has_processed("gateway", 9)
            assert mirror.copies["c1"]["ticks"] == 1
            # A retry that reloads succeeds with the same tracking.
            retry: CompanyCopy = mirror.repository.get(copy.id)
            retry.see_tick()
            mirror.save_with_tracking(retry, tracking=Tracking("gateway", 9))
            assert mirror.has_processed("gateway", 9)
            assert mirror.copies["c1"]["ticks"] == 2
        finally:
            mirror.close()

    def test_a_publication_check_refuses_the_whole_save(self, settings: StoreSettings) -> None:
        mirror = build_application(MirrorApp, service="realizer", settings=settings)
        try:
            checked: list[str] = []

            def check(domain_event: Any) -> None:
                checked.append(type(domain_event).__name__)
                if isinstance(domain_event, CompanyCopy.TickSeen):
                    raise ValueError("cannot be published")

            mirror.publication_check = check
            copy = CompanyCopy(company_id="c1", name="Acme", issue_prefix="ACME")
            copy.see_tick()
            # Checked before anything is recorded: no event, no position.
            with pytest.raises(ValueError, match="cannot be published"):
                mirror.save_with_tracking(copy, tracking=Tracking("gateway", 1))
            assert checked == ["Copied", "TickSeen"]
            assert mirror.last_notification_id() == 0
            assert not mirror.has_processed("gateway", 1)
            assert mirror.copies == {}
            # Without the failing event the same use case saves.
            mirror.save(CompanyCopy(company_id="c1", name="Acme", issue_prefix="ACME"))
            assert mirror.last_notification_id() == 1
        finally:
            mirror.close()

    def test_a_tracking_only_save_records_the_position(self, app: GatewayApp) -> None:
        app.create_company("Acme", "ACME")
        recordings = app.save_with_tracking(tracking=Tracking("controller", 3))
        assert recordings == []
        assert app.has_processed("controller", 3)
        assert app.last_notification_id() == 1

    def test_snapshots_every_interval(self, settings: StoreSettings) -> None:
        app = build_application(SnappyGateway, service="gateway", settings=settings)
        try:
            company_id = app.create_company("Acme", "ACME")
            app.tick(company_id, 25)  # versions 2..26
            assert app.snapshots is not None
            latest = list(app.snapshots.get(company_id, desc=True, limit=1))
            assert [s.originator_version for s in latest] == [20]
            versions = [s.originator_version for s in app.snapshots.get(company_id)]
            assert versions == [10, 20]
            loaded: Company = app.repository.get(company_id)
            assert (loaded.version, loaded.ticks) == (26, 25)
        finally:
            app.close()

    def test_a_snapshot_of_the_aggregate_just_saved_is_its_recorded_state(
        self, settings: StoreSettings
    ) -> None:
        app = build_application(SnappyGateway, service="gateway", settings=settings)
        try:
            company_id = app.create_company("Acme", "ACME")
            for _ in range(11):  # one save each: version 10 is reached by a save of its own
                app.tick(company_id)
            assert app.snapshots is not None
            (snapshot,) = app.snapshots.get(company_id)
            assert (snapshot.originator_version, snapshot.state["ticks"]) == (10, 9)
            assert snapshot.state["name"] == "Acme"
            app.repository.cache = None  # type: ignore[assignment]
            loaded: Company = app.repository.get(company_id)
            assert (loaded.version, loaded.ticks) == (12, 11)
            at_ten: Company = app.repository.get(company_id, version=10)
            assert (at_ten.version, at_ten.ticks) == (10, 9)
        finally:
            app.close()

    def test_audit_trail_shows_types_causes_and_data(self, app: GatewayApp) -> None:
        with acting(Cause(actor=ADMIN, reason="onboarding")):
            company_id = app.create_company("Acme", "ACME")
        with acting(Cause(actor=ADMIN, run_id="run-1", reason="typo")):
            app.rename(company_id, "Acme Corp")
        app.tick(company_id)
        trail = audit_trail(app, str(company_id))
        assert (trail.service, trail.aggregate_type, trail.total) == ("gateway", "Company", 3)
        # Types of the one vocabulary (derived: the test's events are never published), a label
        # for people, the stored class aside.
        assert [e.type for e in trail.events] == [
            "company.created.v1",
            "company.renamed.v1",
            "company.ticked.v1",
        ]
        assert [e.label for e in trail.events] == [
            "Company created",
            "Company renamed",
            "Company ticked",
        ]
        assert trail.events[1].stored_type == "Company.Renamed"
        assert [e.aggregate_version for e in trail.events] == [1, 2, 3]
        created, renamed, ticked = trail.events
        assert created.data == {"name": "Acme", "issue_prefix": "ACME"}
        assert created.actor == {"type": "admin", "id": "admin-1"}
        assert created.reason == "onboarding"
        assert (renamed.data, renamed.run_id, renamed.reason) == (
            {"name": "Acme Corp"},
            "run-1",
            "typo",
        )
        assert (ticked.data, ticked.actor) == ({}, None)
        page = audit_trail(app, company_id, limit=1, offset=1)
        assert (page.total, [e.type for e in page.events]) == (3, ["company.renamed.v1"])
        assert audit_trail(app, str(uuid4())).total == 0
        assert audit_trail(app, "not-a-uuid").total == 0

    def test_replay_matches_then_names_each_difference(
        self, app: GatewayApp, settings: StoreSettings
    ) -> None:
        first = app.create_company("Acme", "ACME")
        second = app.create_company("Beta", "BETA")
        app.tick(first, 2)
        app.rename(second, "Beta Ltd")
        fresh = build_application(GatewayApp, service="gateway", settings=settings)
        try:
            report = verify_replay(fresh, app)
            assert report.ok, report.differences
            assert report.notifications_replayed == 5
            assert report.read_models == ["companies"]
            # The live read model drifts: the report says where.
            app.companies[str(first)]["ticks"] = 7
            del app.companies[str(second)]
            again = verify_replay(
                build_application(GatewayApp, service="gateway", settings=settings), app
            )
            assert not again.ok
            assert f"companies['{first}']['ticks']: live=7 rebuilt=2" in again.differences
            assert any(
                d.startswith(f"companies['{second}']: only in rebuilt") for d in again.differences
            )
        finally:
            fresh.close()


class PersistentStoreBehaviour(StoreBehaviour):
    """What stores that outlive the process must also do."""

    def test_a_new_instance_rebuilds_read_models_and_keeps_positions(
        self, settings: StoreSettings
    ) -> None:
        app = build_application(GatewayApp, service="gateway", settings=settings)
        company_id = app.create_company("Acme", "ACME")
        app.tick(company_id, 4)
        app.save_with_tracking(tracking=Tracking("controller", 12))
        app.recorder.insert_tracking(Tracking(OUTBOX_TRACKING, 3))
        before = app.read_models()
        app.close()
        reopened = build_application(GatewayApp, service="gateway", settings=settings)
        try:
            assert reopened.read_models() == before
            assert reopened.notifications_projected == 5
            assert reopened.position("controller") == 12
            assert reopened.position(OUTBOX_TRACKING) == 3
            loaded: Company = reopened.repository.get(company_id)
            assert loaded.ticks == 4
        finally:
            reopened.close()


class TestMemoryStore(StoreBehaviour):
    @pytest.fixture
    def settings(self, tmp_path: Path) -> StoreSettings:
        return StoreSettings(kind="memory", home=tmp_path)


class TestSqliteStore(PersistentStoreBehaviour):
    @pytest.fixture
    def settings(self, tmp_path: Path) -> StoreSettings:
        return StoreSettings(kind="sqlite", home=tmp_path)

    def test_one_file_per_service(self, settings: StoreSettings, tmp_path: Path) -> None:
        for service in ("gateway", "realizer"):
            build_application(GatewayApp, service=service, settings=settings).close()
        assert sorted(p.name for p in (tmp_path / "data").iterdir() if p.suffix == ".sqlite") == [
            "gateway.sqlite",
            "realizer.sqlite",
        ]


@pytest.mark.integration
class TestPostgresStore(PersistentStoreBehaviour):
    @pytest.fixture
    def settings(self, tmp_path: Path, pg_database: str) -> StoreSettings:
        return StoreSettings(kind="postgres", home=tmp_path, postgres_dsn=pg_database)

    def test_one_schema_per_service(self, settings: StoreSettings, pg_database: str) -> None:
        for service in ("gateway", "runtime-supervisor"):
            build_application(GatewayApp, service=service, settings=settings).close()
        with psycopg.connect(pg_database) as conn:
            rows: list[Any] = conn.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_schema LIKE 'clipyard_%' ORDER BY 1, 2"
            ).fetchall()
        assert [tuple(r) for r in rows] == [
            (schema, table)
            for schema in ("clipyard_gateway", "clipyard_runtime_supervisor")
            for table in ("clipyard_leases", "store_events", "store_snapshots", "store_tracking")
        ]


@pytest.mark.integration
def test_replicas_starting_together_on_an_empty_schema_all_start(
    tmp_path: Path, pg_database: str
) -> None:
    settings = StoreSettings(kind="postgres", home=tmp_path, postgres_dsn=pg_database)
    errors: list[str] = []
    apps: list[GatewayApp] = []

    def start() -> None:
        try:
            apps.append(build_application(GatewayApp, service="gateway", settings=settings))
        except Exception as error:  # collected for the assertion
            errors.append(repr(error))

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for app in apps:
        app.close()
    assert errors == []
    assert len(apps) == 4


def test_subclasses_keep_the_store_name_unless_they_choose_one() -> None:
    class Named(ServiceApplication):
        name = "custom"

    assert GatewayApp.name == MirrorApp.name == "store"
    assert Named.name == "custom"
