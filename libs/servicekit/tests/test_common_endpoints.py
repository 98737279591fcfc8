# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""``audit`` and ``replay_verify`` over a real bus: operators only, no secrets, no stalled store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, ClassVar
from uuid import UUID

import nats
import nats.js.errors
import pytest
from eventsourcing.domain import event
from service_under_test import fresh_event_stream, start_test_service

from contracts import subjects
from contracts.base import Actor, ErrorReply, Principal
from contracts.service import AuditTrail, GetAuditTrail, ReplayReport, VerifyReplay
from eventstore import ClipyardAggregate, ServiceApplication
from natsbus import BusClient
from servicekit import ServiceRuntime

pytestmark = pytest.mark.integration

ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="operator"))
SYSTEM = Principal(company_id=None, actor=Actor(type="system", id="clipyard"))
BOARD = Principal(company_id="c-1", actor=Actor(type="board", id="k-1"))
AGENT = Principal(company_id="c-1", actor=Actor(type="agent", id="a-1"))
TOKEN_HASH = "ab" * 32


class Note(ClipyardAggregate):
    """Something stored with a secret's hash beside it."""

    @event("Written")
    def __init__(self, text: str, token_hash: str) -> None:
        self.text = text


class Notebook(ServiceApplication):
    """Notes by id; while ``hold`` is set, projecting waits for ``release`` (only in a rebuild)."""

    hold: ClassVar[bool] = False
    rebuilding: ClassVar[threading.Event] = threading.Event()
    release: ClassVar[threading.Event] = threading.Event()

    def init_read_models(self) -> None:
        self.notes: dict[str, str] = {}

    def project(self, domain_event: Any) -> None:
        cls = type(self)
        if cls.hold:
            cls.rebuilding.set()
            cls.release.wait(timeout=60)  # never forever, whatever the test does
        if isinstance(domain_event, Note.Written):
            self.notes[str(domain_event.originator_id)] = domain_event.text

    def read_models(self) -> dict[str, Any]:
        return {"notes": self.notes}

    def write(self, text: str) -> UUID:
        note = Note(text=text, token_hash=TOKEN_HASH)
        self.save(note)
        return note.id


@pytest.fixture
async def runtime(tmp_path: Path, nats_server: Any) -> AsyncIterator[ServiceRuntime]:
    await fresh_event_stream(nats_server.url)
    async with AsyncExitStack() as stack:
        yield await start_test_service(stack, tmp_path, nats_server.url, "notebook", Notebook)
    Notebook.hold = False
    Notebook.release.set()


@pytest.fixture
async def bus(nats_server: Any) -> AsyncIterator[BusClient]:
    nc = await nats.connect(nats_server.url)
    yield BusClient(nc)
    await nc.drain()


AUDIT = subjects.service_query("controller", "audit")
REPLAY = subjects.service_query("controller", "replay_verify")


async def test_only_admin_or_system_may_audit_or_replay(
    runtime: ServiceRuntime, bus: BusClient
) -> None:
    note_id = str(await runtime.store(runtime.app.write, "hello"))  # type: ignore[attr-defined]
    for principal in (BOARD, AGENT):
        for subject, query in (
            (AUDIT, GetAuditTrail(principal=principal, aggregate_id=note_id)),
            (REPLAY, VerifyReplay(principal=principal)),
        ):
            reply = await bus.request(subject, query, timeout=5)
            assert isinstance(reply, ErrorReply), (subject, principal)
            assert (reply.code, reply.status) == ("forbidden", 403)
            assert "admin" in reply.message
    for principal in (ADMIN, SYSTEM):
        trail = await bus.call(
            AUDIT, GetAuditTrail(principal=principal, aggregate_id=note_id), AuditTrail, timeout=5
        )
        # The stored hash stays in the service.
        assert trail.events[0].data == {"text": "hello"}
        report = await bus.call(REPLAY, VerifyReplay(principal=principal), ReplayReport, timeout=5)
        assert report.ok, report.differences


async def test_replay_rebuilds_off_the_store_thread(
    runtime: ServiceRuntime, bus: BusClient
) -> None:
    for index in range(8):
        await runtime.store(runtime.app.write, f"note {index}")  # type: ignore[attr-defined]
    # The fresh instance's rebuild now stops at its first projection until released.
    Notebook.rebuilding, Notebook.release = threading.Event(), threading.Event()
    Notebook.hold = True
    replay = asyncio.ensure_future(
        bus.call(REPLAY, VerifyReplay(principal=ADMIN), ReplayReport, timeout=30)
    )
    try:
        assert await asyncio.to_thread(Notebook.rebuilding.wait, 20), "the rebuild never started"
        # The store thread answers while the rebuild is held: were the rebuild on the store
        # thread, this call would wait for the release and time out.
        answered = await asyncio.wait_for(runtime.store(lambda: "answered"), 10)
        assert answered == "answered"
        assert not replay.done()
    finally:
        Notebook.hold = False
        Notebook.release.set()
    report = await replay
    assert report.ok, report.differences
    assert report.notifications_replayed == 8
