# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""The outbox relay against a real nats-server, for every store backend."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import msgspec
import nats.errors
import pytest
from eventsourcing.persistence import Tracking
from eventstore_backends import (
    MemoryBackend,
    PostgresBackend,
    SqliteBackend,
    stream_messages,
)
from eventstore_sample import ADMIN, Company, GatewayApp, gateway_contract
from nats.js.client import JetStreamContext
from opentelemetry import baggage
from opentelemetry import context as otel_context

from contracts.events import AnyEvent
from contracts.gateway import CompanyCreated
from contracts.subjects import EVENT_STREAM
from eventstore import (
    OUTBOX_TRACKING,
    Cause,
    EventTooLargeError,
    OutboxRelay,
    OutboxSkips,
    RelayRefusedError,
    StoreExecutor,
    StoreSettings,
    UnpublishableEventError,
    acting,
    audit_trail,
    build_application,
    skips_id,
)
from eventstore import relay_publish as relay_module
from natsbus.errors import default_error_mapper
from telemetry.spans import tracer

pytestmark = pytest.mark.integration

TESTS_DIR = Path(__file__).parent
DECODER = msgspec.json.Decoder(AnyEvent)


def relay_for(
    app: GatewayApp, js: JetStreamContext, executor: StoreExecutor, **kw: Any
) -> OutboxRelay:
    return OutboxRelay(
        app, js, service="gateway", to_contract=gateway_contract, executor=executor, **kw
    )


def msg_ids(messages: list[Any]) -> list[str]:
    return [m.headers["Nats-Msg-Id"] for m in messages]


class RelayBehaviour:
    """Outbox guarantees every backend must give."""

    @pytest.fixture
    async def app(self, settings: StoreSettings) -> AsyncIterator[GatewayApp]:
        application = build_application(GatewayApp, service="gateway", settings=settings)
        try:
            yield application
        finally:
            application.close()

    async def test_publishes_public_events_in_order_and_skips_private_ones(
        self, app: GatewayApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        relay = relay_for(app, js, executor)
        await relay.start()
        try:
            with acting(Cause(actor=ADMIN, reason="setup")):
                company = app.create_company("Acme", "ACME")  # 1: public
                app.tick(company, 2)  # 2, 3: public
                app.rename(company, "Acme Corp")  # 4: private
            assert await relay.flush(10)
        finally:
            await relay.stop()
        messages = await stream_messages(js)
        assert msg_ids(messages) == ["gateway:1", "gateway:2", "gateway:3"]
        assert [m.subject for m in messages] == [
            "ws.evt.company.created",
            "ws.evt.operation.started.gateway",
            "ws.evt.operation.started.gateway",
        ]
        assert [m.headers["Clipyard-Notification-Id"] for m in messages] == ["1", "2", "3"]
        created = DECODER.decode(messages[0].data)
        assert isinstance(created, CompanyCreated)
        assert (created.name, created.actor, created.reason) == ("Acme", ADMIN, "setup")
        # The private rename moved the durable position too.
        assert app.position(OUTBOX_TRACKING) == 4

    async def test_events_saved_before_any_relay_ran_reach_the_stream_once(
        self, app: GatewayApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        # The process saved and died before publishing anything.
        company = app.create_company("Acme", "ACME")
        app.tick(company, 9)
        # After the restart, a relay publishes everything; a second restart adds nothing.
        for _ in range(2):
            relay = relay_for(app, js, executor)
            await relay.start()
            assert await relay.flush(10)
            await relay.stop()
        messages = await stream_messages(js)
        assert msg_ids(messages) == [f"gateway:{i}" for i in range(1, 11)]

    async def test_republishing_from_an_older_position_is_deduplicated(
        self, app: GatewayApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        company = app.create_company("Acme", "ACME")
        app.tick(company, 4)
        relay = relay_for(app, js, executor)
        await relay.start()
        assert await relay.flush(10)
        await relay.stop()
        # An operator republishes everything: the stream keeps one copy of each.
        again = relay_for(app, js, executor, start_from=0)
        await again.start()
        assert again.position <= 1
        assert await again.flush(10)
        await again.stop()
        assert again.position == 5
        messages = await stream_messages(js)
        assert msg_ids(messages) == [f"gateway:{i}" for i in range(1, 6)]

    async def test_published_but_unrecorded_positions_are_not_published_again(
        self,
        app: GatewayApp,
        js: JetStreamContext,
        executor: StoreExecutor,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        company = app.create_company("Acme", "ACME")
        app.tick(company, 4)

        # The relay publishes, but dies before it can record its position.
        def refuse(_tracking: Tracking) -> None:
            raise OSError("disk gone")

        with monkeypatch.context() as patch:
            patch.setattr(app.recorder, "insert_tracking", refuse)
            crashed = relay_for(app, js, executor)
            await crashed.start()
            assert not await crashed.flush(1.0)  # published, never recorded
            await crashed.stop(timeout=0)
        assert app.position(OUTBOX_TRACKING) is None
        assert len(await stream_messages(js)) == 5
        # The next relay starts after the last message of its service in the stream.
        app.tick(company)
        relay = relay_for(app, js, executor)
        await relay.start()
        assert relay.position == 5
        assert await relay.flush(10)
        await relay.stop()
        assert msg_ids(await stream_messages(js)) == [f"gateway:{i}" for i in range(1, 7)]
        assert app.position(OUTBOX_TRACKING) == 6

    async def test_transient_publish_failures_are_retried_in_order_and_show_as_lag(
        self,
        app: GatewayApp,
        js: JetStreamContext,
        executor: StoreExecutor,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        relay = relay_for(app, js, executor, publish_timeout=0.5, max_backoff=0.2)
        await relay.start()
        try:
            company = app.create_company("Acme", "ACME")
            assert await relay.flush(10)
            assert relay.lag == 0
            # NATS stops acknowledging: every publish times out, and is retried.
            attempts: list[str] = []

            async def no_ack(*args: Any, **kw: Any) -> Any:
                attempts.append(kw["msg_id"])
                raise nats.errors.TimeoutError

            with monkeypatch.context() as patch:
                patch.setattr(relay_module, "publish", no_ack)
                app.tick(company, 3)
                assert not await relay.flush(1.0)
                assert relay.position == 1
                assert relay.lag == 3  # health sees the backlog
                assert set(attempts) == {"gateway:2"}  # never a later one first
                assert len(attempts) >= 2
            # Acks come back: the relay carries on where it was, in order, skipping nothing.
            assert await relay.flush(10)
            assert relay.lag == 0
            assert relay.skipped == 0
        finally:
            await relay.stop()
        assert msg_ids(await stream_messages(js)) == [f"gateway:{i}" for i in range(1, 5)]

    async def test_a_deleted_stream_is_created_again_with_the_services_settings(
        self, app: GatewayApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        relay = relay_for(app, js, executor, max_backoff=0.2, duplicate_window=42.0, max_age=7200)
        await relay.start()
        try:
            company = app.create_company("Acme", "ACME")
            app.tick(company)
            assert await relay.flush(10)
            # The stream disappears under the running relay: it creates it again and goes on.
            await js.delete_stream(EVENT_STREAM)
            app.tick(company, 3)
            assert await relay.flush(10)
        finally:
            await relay.stop()
        assert msg_ids(await stream_messages(js)) == ["gateway:3", "gateway:4", "gateway:5"]
        config = (await js.stream_info(EVENT_STREAM)).config
        assert (config.duplicate_window, config.max_age) == (42.0, 7200.0)
        assert config.subjects == ["ws.evt.>"]

    async def test_an_event_that_can_never_be_published_is_skipped_and_recorded(
        self, app: GatewayApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        # Saved before any relay (so before any save-boundary check): a 600 KB event, a
        # small one, an event whose mapping raises, and another small one.
        huge = app.create_company("x" * 600_000, "HUGE")  # 1: over the bus limit
        small = app.create_company("Acme", "ACME")  # 2
        app.rename(small, "Acme Corp")  # 3: its mapping fails below
        app.tick(small)  # 4

        def mapping(domain_event: Any) -> Any:
            if isinstance(domain_event, Company.Renamed):
                raise ValueError("no contract for a renamed company yet")
            if isinstance(domain_event, OutboxSkips.Event):
                raise AssertionError("the relay's own records are private, never mapped")
            return gateway_contract(domain_event)

        relay = OutboxRelay(
            app, js, service="gateway", to_contract=mapping, executor=executor, max_backoff=0.2
        )
        await relay.start()
        try:
            assert await relay.flush(10), "the outbox is wedged behind an unpublishable event"
            assert await relay.flush(10)  # and past its own (private) records of the skips
            assert relay.lag == 0
        finally:
            await relay.stop()
        assert msg_ids(await stream_messages(js)) == ["gateway:2", "gateway:4"]
        assert relay.skipped == 2
        # Each skip is on record (audit trail of the service's OutboxSkips), with its position.
        trail = audit_trail(app, skips_id("gateway"))
        assert [e.type for e in trail.events] == [
            "outbox.opened.v1",
            "outbox.publication_skipped.v1",
            "outbox.publication_skipped.v1",
        ]
        first, second = trail.events[1:]
        assert (first.data["notification_id"], first.data["origin"]) == (1, f"{huge}:1")
        assert "over the bus limit" in first.data["error"]
        assert first.data["event_type"] == "Company.Created"
        assert second.data["notification_id"] == 3
        assert "no contract for a renamed company yet" in second.data["error"]
        assert first.actor == {"type": "system", "id": "api-gateway"}
        # The skips are private and the position covers them: a restart publishes nothing more.
        assert app.position(OUTBOX_TRACKING) == app.last_notification_id() == 7
        again = relay_for(app, js, executor)
        await again.start()
        assert await again.flush(10)
        await again.stop()
        assert (again.skipped, len(await stream_messages(js))) == (0, 2)

    async def test_the_save_boundary_refuses_an_event_that_could_never_be_published(
        self, app: GatewayApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        def mapping(domain_event: Any) -> Any:
            if isinstance(domain_event, Company.Renamed):
                raise TypeError("Renamed has no contract")
            return gateway_contract(domain_event)

        relay = OutboxRelay(app, js, service="gateway", to_contract=mapping, executor=executor)
        await relay.start()
        try:
            company = await executor.run(app.create_company, "Acme", "ACME")
            with pytest.raises(EventTooLargeError, match="over the bus limit") as too_large:
                await executor.run(app.create_company, "x" * 600_000, "HUGE")
            # The use case gets an error the bus maps to message_too_large / 413.
            reply = default_error_mapper(too_large.value)
            assert (reply.code, reply.status) == ("message_too_large", 413)
            with pytest.raises(UnpublishableEventError, match="Renamed has no contract"):
                await executor.run(app.rename, company, "Acme Corp")
            # Large but under the limit: accepted and published.
            await executor.run(app.create_company, "y" * 500_000, "BIG")
            assert await relay.flush(10)
        finally:
            await relay.stop()
        # Nothing of the refused use cases was saved; the rest went out.
        assert app.last_notification_id() == 2
        assert msg_ids(await stream_messages(js)) == ["gateway:1", "gateway:2"]
        assert relay.skipped == 0

    async def test_a_foreign_message_id_in_the_stream_does_not_stop_the_start(
        self, app: GatewayApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        app.create_company("Acme", "ACME")
        # Not written by a relay: "²" is a digit to str.isdigit, but not to int().
        await js.publish(
            "ws.evt.company.created",
            b"{}",
            headers={"Nats-Msg-Id": "gateway:\u00b2", "Clipyard-Notification-Id": "\u00b2"},
        )
        relay = relay_for(app, js, executor)
        await relay.start()
        assert await relay.flush(10)
        await relay.stop()
        _foreign, published = await stream_messages(js)
        assert published.headers["Nats-Msg-Id"] == "gateway:1"

    async def test_trace_context_stored_in_the_event_reappears_on_the_message(
        self, app: GatewayApp, js: JetStreamContext, executor: StoreExecutor, span_recorder: Any
    ) -> None:
        token = otel_context.attach(baggage.set_baggage("tenant", "acme"))
        try:
            with tracer().start_as_current_span("request") as request:
                app.create_company("Acme", "ACME")
        finally:
            otel_context.detach(token)
        stored = app.mapper.to_domain_event(app.recorder.select_notifications(1, 1)[0])
        relay = relay_for(app, js, executor)
        await relay.start()
        assert await relay.flush(10)
        await relay.stop()
        (message,) = await stream_messages(js)
        context = request.get_span_context()
        # Same trace, same baggage; the PRODUCER span continues from the stored span.
        assert stored.trace["traceparent"].split("-")[1] == f"{context.trace_id:032x}"
        assert message.headers["traceparent"].split("-")[1] == f"{context.trace_id:032x}"
        assert message.headers["baggage"] == stored.trace["baggage"] == "tenant=acme"
        (publish,) = span_recorder.by_name("publish ws.evt.company.created")
        assert publish.parent.span_id == context.span_id
        assert message.headers["traceparent"].split("-")[2] == f"{publish.context.span_id:016x}"

    async def test_refuses_a_wiped_store_under_a_live_stream(
        self, app: GatewayApp, js: JetStreamContext, executor: StoreExecutor, tmp_path: Path
    ) -> None:
        company = app.create_company("Acme", "ACME")
        app.tick(company, 4)
        relay = relay_for(app, js, executor)
        await relay.start()
        assert await relay.flush(10)
        await relay.stop()
        wiped = self.other_store(tmp_path)
        try:
            # An empty store under a stream holding gateway:5.
            with pytest.raises(
                RelayRefusedError, match=r"holds gateway:5 .*last notification is 0"
            ):
                await relay_for(wiped, js, executor).start()
            # A different store that has grown past 5: the origins do not match.
            other = wiped.create_company("Other", "OTH")
            wiped.tick(other, 5)
            with pytest.raises(RelayRefusedError, match=r"notification 5 is [0-9a-f-]+:5"):
                await relay_for(wiped, js, executor).start()
        finally:
            wiped.close()
        assert len(await stream_messages(js)) == 5

    def other_store(self, tmp_path: Path) -> GatewayApp:
        raise NotImplementedError


class TestMemoryRelay(MemoryBackend, RelayBehaviour):
    def other_store(self, tmp_path: Path) -> GatewayApp:
        return build_application(
            GatewayApp, service="gateway", settings=StoreSettings(kind="memory", home=tmp_path)
        )


class TestSqliteRelay(SqliteBackend, RelayBehaviour):
    def other_store(self, tmp_path: Path) -> GatewayApp:
        return build_application(
            GatewayApp,
            service="gateway",
            settings=StoreSettings(kind="sqlite", home=tmp_path / "b"),
        )


class TestPostgresRelay(PostgresBackend, RelayBehaviour):
    @pytest.fixture(autouse=True)
    def _second_database(self, postgres: Any) -> Iterator[None]:
        from testkit.postgres import create_database, drop_database

        name = create_database(postgres.dsn)
        self._second_dsn = postgres.dsn_for(name)
        try:
            yield
        finally:
            drop_database(postgres.dsn, name)

    def other_store(self, tmp_path: Path) -> GatewayApp:
        settings = StoreSettings(kind="postgres", home=tmp_path, postgres_dsn=self._second_dsn)
        return build_application(GatewayApp, service="gateway", settings=settings)


class CrashBehaviour:
    """A service process killed with SIGKILL loses no event and duplicates none."""

    async def spawn(self, settings: StoreSettings, *args: str) -> asyncio.subprocess.Process:
        command = [sys.executable, "-m", "eventstore_sample", "append", "--kind", settings.kind]
        command += ["--home", str(settings.home), *args]
        if settings.postgres_dsn:
            command += ["--dsn", settings.postgres_dsn]
        path = os.pathsep.join(p for p in (str(TESTS_DIR), os.environ.get("PYTHONPATH")) if p)
        return await asyncio.create_subprocess_exec(
            *command,
            env={**os.environ, "PYTHONPATH": path},
            stdout=asyncio.subprocess.PIPE,
        )

    async def expect_line(self, process: asyncio.subprocess.Process, prefix: str) -> str:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        assert line.startswith(prefix), line
        return line

    async def kill(self, process: asyncio.subprocess.Process) -> None:
        process.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(process.wait(), 10) == -signal.SIGKILL

    async def restart_and_publish(
        self, settings: StoreSettings, js: JetStreamContext, executor: StoreExecutor
    ) -> int | None:
        app = build_application(GatewayApp, service="gateway", settings=settings)
        try:
            recorded = app.position(OUTBOX_TRACKING)
            relay = relay_for(app, js, executor)
            await relay.start()
            assert await relay.flush(30)
            await relay.stop()
            return recorded
        finally:
            app.close()

    async def test_killed_after_saving_before_publishing(
        self, settings: StoreSettings, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        process = await self.spawn(settings, "--count", "50")
        assert await self.expect_line(process, "saved") == "saved 50\n"
        await self.kill(process)
        assert await stream_messages(js) == []
        assert await self.restart_and_publish(settings, js, executor) is None
        assert msg_ids(await stream_messages(js)) == [f"gateway:{i}" for i in range(1, 51)]

    async def test_killed_while_publishing(
        self,
        settings: StoreSettings,
        js: JetStreamContext,
        executor: StoreExecutor,
        nats_server: Any,
    ) -> None:
        total = 2000
        process = await self.spawn(
            settings, "--count", str(total), "--nats", nats_server.url, "--batch", "1000"
        )
        await self.expect_line(process, "saved")
        await self.expect_line(process, "relaying")
        deadline = time.monotonic() + 30
        while (await js.stream_info(EVENT_STREAM)).state.messages < 100:
            assert time.monotonic() < deadline, "the child published nothing"
            await asyncio.sleep(0.002)
        await self.kill(process)
        at_kill = (await js.stream_info(EVENT_STREAM)).state.messages
        assert 100 <= at_kill < total, "kill the child while it is publishing"
        recorded = await self.restart_and_publish(settings, js, executor)
        # The child had published more than it had recorded: the gap is not published twice.
        assert (recorded or 0) < at_kill
        messages = await stream_messages(js)
        assert msg_ids(messages) == [f"gateway:{i}" for i in range(1, total + 1)]
        print(f"\n[{self.__class__.__name__}] killed at {at_kill} published, {recorded} recorded")


class TestSqliteCrash(SqliteBackend, CrashBehaviour):
    pass


class TestPostgresCrash(PostgresBackend, CrashBehaviour):
    pass
