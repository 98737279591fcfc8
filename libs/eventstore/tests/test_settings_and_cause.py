# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""Settings become an explicit ``eventsourcing`` env; causes stamp events; the store thread."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.domain import event
from eventstore_sample import ADMIN, Company
from psycopg.conninfo import conninfo_to_dict

from contracts.base import Actor
from eventstore import (
    Cause,
    ClipyardAggregate,
    StoreExecutor,
    StoreSettings,
    acting,
    current_cause,
    eventsourcing_env,
    system_cause,
)
from eventstore.settings import (
    DUMMY_POSTGRES_PASSWORD,
    MEMORY_FACTORY_TOPIC,
    POSTGRES_CONNINFO_SETTING,
    SQLITE_FACTORY_TOPIC,
)


def test_sqlite_is_one_file_per_service_under_home(tmp_path: Path) -> None:
    environ_before = dict(os.environ)
    env = eventsourcing_env(StoreSettings(kind="sqlite", home=tmp_path), "realizer")
    assert env["PERSISTENCE_MODULE"] == SQLITE_FACTORY_TOPIC
    assert env["SQLITE_DBNAME"] == str(tmp_path.resolve() / "data" / "realizer.sqlite")
    assert (tmp_path / "data").is_dir()
    assert dict(os.environ) == environ_before


def test_postgres_env_comes_from_the_dsn_with_a_schema_per_service(tmp_path: Path) -> None:
    settings = StoreSettings(
        kind="postgres",
        home=tmp_path,
        postgres_dsn="postgresql://clipyard:s3cret@db.example:6543/events",
    )
    env = eventsourcing_env(settings, "runtime-supervisor")
    conninfo = env.pop(POSTGRES_CONNINFO_SETTING)
    assert conninfo_to_dict(conninfo) == {
        "user": "clipyard",
        "password": "s3cret",
        "host": "db.example",
        "port": "6543",
        "dbname": "events",
        "connect_timeout": "5",
        "fallback_application_name": "clipyard_runtime_supervisor",
    }
    assert {k: v for k, v in env.items() if k != "POSTGRES_CONNECT_TIMEOUT"} == {
        "PERSISTENCE_MODULE": "eventstore.postgres_factory:ClipyardPostgresFactory",
        "POSTGRES_DBNAME": "events",
        "POSTGRES_HOST": "db.example",
        "POSTGRES_PORT": "6543",
        "POSTGRES_USER": "clipyard",
        "POSTGRES_PASSWORD": "s3cret",
        "POSTGRES_SCHEMA": "clipyard_runtime_supervisor",
    }
    assert not (tmp_path / "data").exists()


def test_postgres_without_password_gets_a_dummy_one(tmp_path: Path) -> None:
    dsn = "host=/run/pg port=5432 user=postgres dbname=clipyard"
    env = eventsourcing_env(
        StoreSettings(kind="postgres", home=tmp_path, postgres_dsn=dsn), "gateway"
    )
    assert env["POSTGRES_PASSWORD"] == DUMMY_POSTGRES_PASSWORD
    assert (env["POSTGRES_HOST"], env["POSTGRES_SCHEMA"]) == ("/run/pg", "clipyard_gateway")
    # The connection itself gets no dummy: libpq's PGPASSWORD and ~/.pgpass still apply.
    assert "password" not in conninfo_to_dict(env[POSTGRES_CONNINFO_SETTING])


def test_memory_and_refusals(tmp_path: Path) -> None:
    assert eventsourcing_env(StoreSettings(kind="memory", home=tmp_path), "gateway") == {
        "PERSISTENCE_MODULE": MEMORY_FACTORY_TOPIC
    }
    with pytest.raises(ValueError, match="needs a DSN"):
        eventsourcing_env(StoreSettings(kind="postgres", home=tmp_path), "gateway")
    with pytest.raises(ValueError, match="unknown store kind"):
        eventsourcing_env(StoreSettings(kind="mongo", home=tmp_path), "gateway")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid service name"):
        eventsourcing_env(StoreSettings(kind="sqlite", home=tmp_path), "../etc")


def test_acting_nests_and_restores() -> None:
    assert current_cause() is None
    outer = Cause(actor=ADMIN, reason="outer")
    with acting(outer):
        inner = system_cause("workspace-realizer", "timer", run_id="r1")
        with acting(inner):
            assert current_cause() == inner
            assert inner.actor == Actor(type="system", id="workspace-realizer")
        assert current_cause() == outer
        assert outer.because("other").reason == "other"
    assert current_cause() is None


class Job(ClipyardAggregate):
    """An aggregate whose command methods reuse metadata names."""

    @event("Started")
    def __init__(self, command: str) -> None:
        self.command = command

    @event("Failed")
    def fail(self, reason: str) -> None:
        self.failure = reason

    @event("Stopped")
    def stop(self, reason: str | None = None) -> None:
        self.stop_reason = reason


def test_every_event_class_inherits_the_clipyard_event_base() -> None:
    for event_class in (Job.Started, Job.Failed, Job.Stopped, Company.Created, Company.Ticked):
        assert issubclass(event_class, ClipyardAggregate.Event)
    assert issubclass(Job.Started, ClipyardAggregate.Created)


def test_cause_fills_metadata_and_an_explicit_value_wins() -> None:
    with acting(Cause(actor=ADMIN, run_id="run-1", reason="by hand")):
        job = Job(command="make")
        job.fail("exit 2")
        job.stop()
    started, failed, stopped = job.pending_events
    assert (started.actor, started.run_id, started.reason) == (
        {"type": "admin", "id": "admin-1"},
        "run-1",
        "by hand",
    )
    # A command's own ``reason`` parameter is the event's reason, even None: the cause never
    # changes the arguments the aggregate applies.
    assert (failed.reason, job.failure) == ("exit 2", "exit 2")
    assert (stopped.reason, job.stop_reason) == (None, None)
    assert (failed.actor, stopped.run_id) == ({"type": "admin", "id": "admin-1"}, "run-1")


async def test_store_executor_runs_in_order_on_one_thread_with_the_callers_context() -> None:
    executor = StoreExecutor(name="unit-store")
    seen: list[tuple[str, Any]] = []

    def work(label: str) -> str:
        seen.append((threading.current_thread().name, current_cause()))
        return label

    try:
        with acting(Cause(actor=ADMIN, reason="ctx")):
            results = await asyncio.gather(*(executor.run(work, str(i)) for i in range(20)))
        assert results == [str(i) for i in range(20)]
        assert len({name for name, _ in seen}) == 1
        assert seen[0][0].startswith("unit-store")
        assert all(cause == Cause(actor=ADMIN, reason="ctx") for _, cause in seen)
        assert current_cause() is None
    finally:
        executor.close()
    with pytest.raises(RuntimeError, match="closed"):
        await executor.run(work, "late")
