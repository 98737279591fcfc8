# mypy: disable-error-code="attr-defined"
"""PostgreSQL down under a running service: requests answer 503 "retry" and save nothing; back
up, the same process serves again, with no restart (issue 17, bad input and failure)."""

from __future__ import annotations

import asyncio
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec
import psycopg
import pytest
from eventsourcing.domain import event
from service_under_test import fresh_event_stream, start_test_service

from contracts.base import ErrorReply, Ok
from eventstore import ClipyardAggregate, ServiceApplication
from natsbus import BusClient, RequestContext, connect

pytestmark = pytest.mark.integration

SUBJECT = "ws.cmd.issue.outage"


class Note(ClipyardAggregate):
    @event("Written")
    def __init__(self, text: str) -> None:
        self.text = text


class Notes(ServiceApplication):
    def init_read_models(self) -> None:
        self.notes: list[str] = []

    def project(self, domain_event: Any) -> None:
        if isinstance(domain_event, Note.Written):
            self.notes.append(domain_event.text)

    def write(self, text: str) -> str:
        note = Note(text=text)
        self.save(note)
        return str(note.id)


class Write(msgspec.Struct):
    text: str


def _admin(dsn: str) -> tuple[str, str]:
    """The server's admin DSN (database ``postgres``) and the test database's name."""
    parts = urlsplit(dsn)
    return parts._replace(path="/postgres").geturl(), parts.path.lstrip("/")


def _outage(dsn: str, *, down: bool) -> None:
    admin, database = _admin(dsn)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS {"false" if down else "true"}')
        if down:  # and every open connection cut, as a server restart would
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            )


async def test_requests_answer_retry_while_the_store_is_down_and_resume_after(
    tmp_path: Path, nats_server: Any, pg_database: str
) -> None:
    await fresh_event_stream(nats_server.url)
    env = {"CLIPYARD_STORE": "postgres", "CLIPYARD_POSTGRES_DSN": pg_database}
    async with AsyncExitStack() as stack:
        runtime = await start_test_service(stack, tmp_path, nats_server.url, "notes", Notes, env)

        async def write(request: Write, ctx: RequestContext) -> str:
            return await runtime.store(runtime.app.write, request.text)

        await runtime.service.add_endpoint("write", SUBJECT, write, Write)
        nc = await connect(nats_server.url, name="outage-client")
        stack.push_async_callback(nc.close)
        bus = BusClient(nc)
        assert isinstance(await bus.request(SUBJECT, Write(text="before"), timeout=30), Ok)

        _outage(pg_database, down=True)
        try:
            began = time.monotonic()
            reply = await bus.request(SUBJECT, Write(text="during"), timeout=60)
            took = time.monotonic() - began
        finally:
            _outage(pg_database, down=False)
        assert isinstance(reply, ErrorReply), reply
        assert (reply.code, reply.status) == ("service_unavailable", 503)
        assert "Retry" in reply.message
        assert "Retry in a moment" in reply.message
        print(f"\nanswered 503 after {took:.1f} s")
        assert took < 20, "the store's calls give up within seconds (eventstore.recorders)"

        # Back up: the same process serves again, nothing half-written meanwhile.
        for _ in range(100):
            reply = await bus.request(SUBJECT, Write(text="after"), timeout=30)
            if isinstance(reply, Ok):
                break
            await asyncio.sleep(0.2)
        assert isinstance(reply, Ok), reply
        notes = await runtime.store(lambda: list(runtime.app.notes))
        assert notes[0] == "before"
        assert "during" not in notes
        assert notes[-1] == "after"
        # The lease was kept or taken again: the service still leads its singleton work.
        for _ in range(50):
            if runtime.leadership.held:
                break
            await asyncio.sleep(0.2)
        assert runtime.leadership.held
