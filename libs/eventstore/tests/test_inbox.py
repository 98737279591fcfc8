# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""The inbox against a real nats-server: each upstream event applied exactly once, poison recorded."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from eventsourcing.persistence import Tracking
from eventstore_backends import (
    MemoryBackend,
    PostgresBackend,
    SqliteBackend,
    eventually,
    stream_messages,
)
from eventstore_sample import ADMIN, CompanyCopy, GatewayApp, MirrorApp, gateway_contract
from nats.js.client import JetStreamContext

from contracts.subjects import EVENT_STREAM
from eventstore import (
    Cause,
    Inbox,
    OutboxRelay,
    StoreExecutor,
    StoreSettings,
    UnpublishableEventError,
    acting,
    audit_trail,
    build_application,
    rejections_id,
)
from natsbus.codec import encode
from natsbus.jetstream import event_stream_config
from telemetry.spans import tracer

pytestmark = pytest.mark.integration

FAST_RETRIES = (0.05, 0.1)


class InboxBehaviour:
    """Inbox guarantees every backend must give."""

    @pytest.fixture
    async def gateway(
        self, settings: StoreSettings, js: JetStreamContext, executor: StoreExecutor
    ) -> AsyncIterator[tuple[GatewayApp, OutboxRelay]]:
        app = build_application(GatewayApp, service="gateway", settings=settings)
        relay = OutboxRelay(
            app, js, service="gateway", to_contract=gateway_contract, executor=executor
        )
        await relay.start()
        try:
            yield app, relay
        finally:
            await relay.stop()
            app.close()

    @pytest.fixture
    async def mirror(self, settings: StoreSettings) -> AsyncIterator[MirrorApp]:
        app = build_application(MirrorApp, service="realizer", settings=settings)
        try:
            yield app
        finally:
            app.close()

    def inbox(
        self, mirror: MirrorApp, js: JetStreamContext, executor: StoreExecutor, **kw: Any
    ) -> Inbox:
        return Inbox(
            mirror,
            js,
            upstream="gateway",
            handler=kw.pop("handler", mirror.handle),
            executor=executor,
            retry_delays=FAST_RETRIES,
            fetch_timeout=0.2,
            **kw,
        )

    async def caught_up(self, mirror: MirrorApp, executor: StoreExecutor, position: int) -> None:
        async def reached() -> bool:
            done: bool = await executor.run(mirror.has_processed, "gateway", position)
            return done

        await eventually(reached, what=f"the mirror to record gateway:{position}")

    async def run_inbox(
        self,
        mirror: MirrorApp,
        js: JetStreamContext,
        executor: StoreExecutor,
        position: int,
        **kw: Any,
    ) -> Inbox:
        """Start an inbox, wait for the mirror to record ``position``, stop it; return it."""
        inbox = self.inbox(mirror, js, executor, **kw)
        await inbox.start()
        try:
            await self.caught_up(mirror, executor, position)
        finally:
            await inbox.stop()
        return inbox

    async def drained(self, js: JetStreamContext, inbox: Inbox, what: str) -> None:
        """Wait until the inbox's consumer has nothing pending and nothing unacknowledged."""

        async def consumed_all() -> bool:
            info = await js.consumer_info(EVENT_STREAM, inbox.durable)
            return bool(info.num_pending == 0 and info.num_ack_pending == 0)

        await eventually(consumed_all, what=what)

    async def test_each_event_is_applied_once_and_continues_the_trace(
        self,
        gateway: tuple[GatewayApp, OutboxRelay],
        mirror: MirrorApp,
        js: JetStreamContext,
        executor: StoreExecutor,
        span_recorder: Any,
    ) -> None:
        app, relay = gateway
        with tracer().start_as_current_span("request"), acting(Cause(actor=ADMIN, reason="go")):
            acme = app.create_company("Acme", "ACME")  # 1
        beta = app.create_company("Beta", "BETA")  # 2
        app.tick(acme, 3)  # 3, 4, 5
        app.rename(beta, "Beta Ltd")  # 6: private, never published
        app.tick(beta)  # 7
        assert await relay.flush(10)
        await self.run_inbox(mirror, js, executor, 7)
        assert mirror.copies == {
            str(acme): {"prefix": "ACME", "ticks": 3},
            str(beta): {"prefix": "BETA", "ticks": 1},
        }
        assert mirror.last_notification_id() == 6  # 2 copies + 4 ticks seen
        assert mirror.position("gateway") == 7
        # The copy was made by the mirror reacting, in the trace of the original request.
        (copied, *_) = mirror.notification_log.select(start=1, limit=1)
        reaction = mirror.mapper.to_domain_event(copied)
        origin = app.mapper.to_domain_event(app.notification_log.select(start=1, limit=1)[0])
        assert reaction.actor == {"type": "system", "id": "workspace-realizer"}
        assert reaction.reason == "company.created.v1 from gateway:1"
        trace_id = origin.trace["traceparent"].split("-")[1]
        assert reaction.trace["traceparent"].split("-")[1] == trace_id
        processed = span_recorder.by_name("process ws.evt.company.created")
        assert [f"{s.context.trace_id:032x}" == trace_id for s in processed] == [True, False]

    async def test_redelivered_and_republished_events_change_nothing(
        self,
        gateway: tuple[GatewayApp, OutboxRelay],
        mirror: MirrorApp,
        js: JetStreamContext,
        executor: StoreExecutor,
    ) -> None:
        app, relay = gateway
        # A short de-duplication window, so that the stream can take the same ids again later
        # (set by hand: no service lowers a stream's window).
        await js.update_stream(event_stream_config(duplicate_window=0.2))
        acme = app.create_company("Acme", "ACME")
        app.tick(acme, 2)
        assert await relay.flush(10)
        inbox = await self.run_inbox(mirror, js, executor, 3)
        state, count = mirror.read_models(), mirror.last_notification_id()
        # Redelivery: the durable consumer is recreated from the start of the stream.
        await js.delete_consumer(EVENT_STREAM, inbox.durable)
        again = self.inbox(mirror, js, executor)
        await again.start()
        # Republication: the same notifications land in the stream a second time.
        await asyncio.sleep(0.6)  # the original ids have left the de-duplication window
        for message in await stream_messages(js):
            await js.publish(message.subject, message.data, headers=message.headers)
        assert len(await stream_messages(js)) == 6
        await self.drained(js, again, "the inbox to consume the copies")
        await again.stop()
        assert mirror.read_models() == state
        assert mirror.last_notification_id() == count == 3
        assert mirror.position("gateway") == 3

    async def test_a_failing_handler_is_retried_and_records_its_position_once(
        self,
        gateway: tuple[GatewayApp, OutboxRelay],
        mirror: MirrorApp,
        js: JetStreamContext,
        executor: StoreExecutor,
    ) -> None:
        app, relay = gateway
        acme = app.create_company("Acme", "ACME")
        app.tick(acme)
        assert await relay.flush(10)
        attempts: list[int] = []

        def flaky(event: Any, tracking: Tracking) -> None:
            attempts.append(tracking.notification_id)
            if tracking.notification_id == 2 and attempts.count(2) < 3:
                # The save fails half-way (a version conflict): nothing may be recorded.
                copy: CompanyCopy = mirror.repository.get(CompanyCopy.create_id(str(acme)))
                stale: CompanyCopy = mirror.repository.get(CompanyCopy.create_id(str(acme)))
                copy.see_tick()
                stale.see_tick()
                mirror.save(copy)
                mirror.save_with_tracking(stale, tracking=tracking)
            mirror.handle(event, tracking)

        await self.run_inbox(mirror, js, executor, 2, handler=flaky)
        assert attempts == [1, 2, 2, 2]
        assert mirror.position("gateway") == 2
        # One tick from the real handler, plus the two saved by the failed attempts' first save.
        assert mirror.copies[str(acme)]["ticks"] == 3

    async def test_poison_messages_are_terminated_and_recorded(
        self, mirror: MirrorApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        # Garbage with an id, garbage without one, then a valid event.
        await js.publish(
            "ws.evt.company.created", b"{not json", headers={"Nats-Msg-Id": "gateway:4"}
        )
        await js.publish("ws.evt.company.created", b'{"type": "nope"}')
        good = {
            "type": "company.created.v1",
            "eventId": "e5",
            "aggregate": "company",
            "aggregateId": "c5",
            "aggregateVersion": 1,
            "companyId": "c5",
            "occurredAt": "2026-11-29T12:00:00Z",
            "actor": {"type": "admin", "id": "a"},
            "name": "Gamma",
            "issuePrefix": "GAM",
        }
        await js.publish(
            "ws.evt.company.created", encode(good), headers={"Nats-Msg-Id": "gateway:5"}
        )
        inbox = self.inbox(mirror, js, executor)
        await inbox.start()
        try:
            await self.caught_up(mirror, executor, 5)
            await self.drained(js, inbox, "the inbox to finish")
        finally:
            await inbox.stop()
        assert mirror.copies == {"c5": {"prefix": "GAM", "ticks": 0}}
        trail = audit_trail(mirror, rejections_id("gateway"))
        # Shown with the public type of a rejection, the stored class kept aside.
        assert [e.type for e in trail.events] == [
            "inbox.opened.v1",
            "inbox.message_rejected.v1",
            "inbox.message_rejected.v1",
        ]
        assert trail.events[1].label == "Inbox message rejected"
        assert trail.events[1].stored_type == "InboxRejections.MessageRejected"
        first, second = trail.events[1:]
        assert (first.data["msg_id"], first.data["notification_id"]) == ("gateway:4", 4)
        assert first.data["error"].startswith("undecodable event")
        assert first.data["stream_sequence"] == 1
        assert (second.data["msg_id"], second.data["notification_id"]) == (None, None)
        assert "Nats-Msg-Id" in second.data["error"]
        assert first.reason == "poison message from gateway"
        # Terminated: the server delivered each message once.
        info = await js.consumer_info(EVENT_STREAM, inbox.durable)
        assert (info.delivered.stream_seq, info.num_redelivered) == (3, 0)

    async def test_an_unknown_event_type_is_skipped_with_its_position(
        self,
        mirror: MirrorApp,
        js: JetStreamContext,
        executor: StoreExecutor,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        # After a rolling upgrade the upstream publishes a type this build does not know yet.
        newer = {**envelope_of("c1"), "type": "company.archived.v1", "archivedBy": "x"}
        await js.publish(
            "ws.evt.company.archived", encode(newer), headers={"Nats-Msg-Id": "gateway:1"}
        )
        await js.publish(
            "ws.evt.company.created",
            encode(company_created("c2", "Gamma", "GAM")),
            headers={"Nats-Msg-Id": "gateway:2"},
        )
        caplog.set_level(logging.INFO, logger="eventstore.inbox")
        inbox = await self.run_inbox(mirror, js, executor, 2)
        # Not poison: nothing rejected, nothing terminated; counted and logged at INFO.
        assert mirror.copies == {"c2": {"prefix": "GAM", "ticks": 0}}
        assert audit_trail(mirror, rejections_id("gateway")).total == 0
        assert inbox.unknown_skipped == {"company.archived.v1": 1}
        (skipped,) = [r for r in caplog.records if "company.archived.v1" in r.getMessage()]
        assert skipped.levelno == logging.INFO
        info = await js.consumer_info(EVENT_STREAM, inbox.durable)
        assert (info.ack_floor.stream_seq, info.num_redelivered) == (2, 0)

    async def test_malformed_messages_are_poison(
        self, mirror: MirrorApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        bad_id = "gateway:\u00b2"  # "²": a digit to str.isdigit, not to int()
        no_envelope = b'{"type": "company.archived.v1"}'
        known_but_broken = {**envelope_of("c3"), "type": "company.created.v1"}  # no name
        for headers, body in [
            ({"Nats-Msg-Id": bad_id}, encode(company_created("c1", "A", "AAA"))),
            ({"Nats-Msg-Id": "gateway:2"}, no_envelope),
            ({"Nats-Msg-Id": "gateway:3"}, encode(known_but_broken)),
            ({"Nats-Msg-Id": "gateway:4"}, encode(company_created("c4", "D", "DDD"))),
        ]:
            await js.publish("ws.evt.company.created", body, headers=headers)
        inbox = await self.run_inbox(mirror, js, executor, 4)
        assert mirror.copies == {"c4": {"prefix": "DDD", "ticks": 0}}
        assert not inbox.unknown_skipped
        trail = audit_trail(mirror, rejections_id("gateway"))
        rejected = [e.data for e in trail.events if e.type == "inbox.message_rejected.v1"]
        assert [(r["msg_id"], r["notification_id"]) for r in rejected] == [
            (bad_id, None),
            ("gateway:2", 2),
            ("gateway:3", 3),
        ]
        assert "Nats-Msg-Id" in rejected[0]["error"]
        assert rejected[1]["error"].startswith("undecodable event:")
        assert rejected[2]["error"].startswith("undecodable event company.created.v1:")
        info = await js.consumer_info(EVENT_STREAM, inbox.durable)
        assert (info.delivered.stream_seq, info.num_redelivered) == (4, 0)

    async def test_a_reaction_that_could_never_be_published_is_rejected_not_retried(
        self, mirror: MirrorApp, js: JetStreamContext, executor: StoreExecutor
    ) -> None:
        attempts: list[int] = []

        def refuse_huge(domain_event: Any) -> None:
            if isinstance(domain_event, CompanyCopy.Copied) and len(domain_event.name) > 1000:
                attempts.append(1)
                raise UnpublishableEventError("CompanyCopy.Copied is over the bus limit")

        mirror.publication_check = refuse_huge
        for n, name in [(1, "x" * 5000), (2, "Beta")]:
            await js.publish(
                "ws.evt.company.created",
                encode(company_created(f"c{n}", name, f"P{n}")),
                headers={"Nats-Msg-Id": f"gateway:{n}"},
            )
        await self.run_inbox(mirror, js, executor, 2)
        # Rejected once (with its position), not retried forever; the next event is applied.
        assert attempts == [1]
        assert mirror.copies == {"c2": {"prefix": "P2", "ticks": 0}}
        trail = audit_trail(mirror, rejections_id("gateway"))
        (rejected,) = [e.data for e in trail.events if e.type == "inbox.message_rejected.v1"]
        assert rejected["notification_id"] == 1
        assert "can never be published" in rejected["error"]

    async def test_the_inbox_and_the_relay_recover_when_the_stream_is_deleted(
        self,
        gateway: tuple[GatewayApp, OutboxRelay],
        mirror: MirrorApp,
        js: JetStreamContext,
        executor: StoreExecutor,
    ) -> None:
        app, relay = gateway
        acme = app.create_company("Acme", "ACME")  # 1
        assert await relay.flush(10)
        inbox = self.inbox(mirror, js, executor)
        await inbox.start()
        try:
            await self.caught_up(mirror, executor, 1)
            # The stream (and the inbox's durable consumer with it) is deleted under both.
            await js.delete_stream(EVENT_STREAM)
            app.tick(acme, 2)  # 2, 3
            # The relay creates the stream again and publishes; the inbox's consumer comes back.
            assert await relay.flush(10)
            await self.caught_up(mirror, executor, 3)
        finally:
            await inbox.stop()
        assert mirror.copies == {str(acme): {"prefix": "ACME", "ticks": 2}}
        info = await js.consumer_info(EVENT_STREAM, inbox.durable)
        assert (info.num_pending, info.num_ack_pending) == (0, 0)


def envelope_of(company_id: str) -> dict[str, Any]:
    """The envelope fields of a made-up upstream event about ``company_id``."""
    return {
        "eventId": f"e-{company_id}",
        "aggregate": "company",
        "aggregateId": company_id,
        "aggregateVersion": 1,
        "companyId": company_id,
        "occurredAt": "2026-11-29T12:00:00Z",
        "actor": {"type": "admin", "id": "a"},
    }


def company_created(company_id: str, name: str, prefix: str) -> dict[str, Any]:
    """A well-formed ``company.created.v1`` body."""
    return {
        **envelope_of(company_id),
        "type": "company.created.v1",
        "name": name,
        "issuePrefix": prefix,
    }


class TestMemoryInbox(MemoryBackend, InboxBehaviour):
    pass


class TestSqliteInbox(SqliteBackend, InboxBehaviour):
    pass


class TestPostgresInbox(PostgresBackend, InboxBehaviour):
    pass
