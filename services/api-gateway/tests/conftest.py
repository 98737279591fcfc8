"""Fixtures for the gateway's unit and handler tests: the in-memory store and a fake bus."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import pytest
from litestar.testing import TestClient
from opentelemetry import trace

from api_gateway.app import create_app
from api_gateway.application import GatewayApplication
from api_gateway.http.dependencies import Ping, StreamedEvent
from api_gateway.settings import GatewaySettings
from contracts.base import Accepted, ErrorReply, Ok
from eventstore import StoreSettings
from servicekit import NatsSettings, ServiceSettings

ADMIN_KEY = "admin-key-for-tests-0123456789"

Reply: TypeAlias = Ok | ErrorReply | Accepted


@dataclass
class SentRequest:
    """One request the gateway sent, with the trace it was sent in."""

    subject: str
    message: Any
    timeout: float
    trace_id: int


@dataclass
class FakeBus:
    """The bus port, by hand: scripted replies per subject, pings per service, a list of events.

    ``replies[subject]`` is a reply, or a callable ``(message) -> reply``, or an awaitable factory
    for slow answers; an unscripted subject answers ``service_unavailable`` as NATS's no-responders
    does.
    """

    connected: bool = True
    replies: dict[str, Reply | Callable[[Any], Any]] = field(default_factory=dict)
    pings: dict[str, Ping | Exception] = field(default_factory=dict)
    stream: list[StreamedEvent] = field(default_factory=list)
    hold_stream_open: bool = False
    sent: list[SentRequest] = field(default_factory=list)
    stream_starts: list[int | None] = field(default_factory=list)
    streams_closed: int = 0

    async def request(self, subject: str, message: Any, *, timeout: float) -> Reply:
        trace_id = trace.get_current_span().get_span_context().trace_id
        self.sent.append(SentRequest(subject, message, timeout, trace_id))
        scripted = self.replies.get(subject)
        if scripted is None:
            return ErrorReply(
                code="service_unavailable", message=f"no service answers {subject}", status=503
            )
        if callable(scripted):
            answer = scripted(message)
            reply: Reply = await answer if asyncio.iscoroutine(answer) else answer
            return reply
        return scripted

    async def ping(self, service_name: str, *, timeout: float) -> Ping:
        answer = self.pings.get(service_name, TimeoutError())
        if isinstance(answer, Exception):
            if isinstance(answer, TimeoutError):
                await asyncio.sleep(timeout)
            raise answer
        return answer

    async def events(self, *, after_sequence: int | None) -> AsyncIterator[StreamedEvent]:
        self.stream_starts.append(after_sequence)
        try:
            for one in self.stream:
                if after_sequence is None or one.sequence > after_sequence:
                    yield one
            if self.hold_stream_open:
                await asyncio.Event().wait()
        finally:
            self.streams_closed += 1


@pytest.fixture
def settings(tmp_path: Path) -> GatewaySettings:
    service = ServiceSettings(
        service="api-gateway",
        home=tmp_path,
        nats=NatsSettings(),
        store=StoreSettings(kind="memory", home=tmp_path),
        admin_key=ADMIN_KEY,
    )
    return GatewaySettings.build(
        service, health_timeout=0.2, query_timeout=0.5, request_timeout=0.5, sse_keepalive=0.05
    )


@pytest.fixture
def application() -> Iterator[GatewayApplication]:
    app = GatewayApplication(service="gateway")
    yield app
    app.close()


@pytest.fixture
def bus() -> FakeBus:
    return FakeBus()


@pytest.fixture
def client(
    application: GatewayApplication, bus: FakeBus, settings: GatewaySettings
) -> Iterator[TestClient[Any]]:
    app = create_app(application=application, bus=bus, settings=settings)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def bearer(key: str) -> dict[str, str]:
    """Headers authenticating with ``key``."""
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def admin() -> dict[str, str]:
    """Headers authenticating as the admin."""
    return dict(ADMIN)


@pytest.fixture
def make_company(client: TestClient[Any]) -> Callable[..., dict[str, Any]]:
    """Create a company as the admin; return its JSON."""

    def make(name: str = "Acme Corp", **extra: Any) -> dict[str, Any]:
        response = client.post("/api/companies", json={"name": name, **extra}, headers=ADMIN)
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body

    return make


@pytest.fixture
def make_board_key(client: TestClient[Any]) -> Callable[[str], str]:
    """Create a board key of a company as the admin; return the clear key."""

    def make(company_id: str, name: str = "board") -> str:
        response = client.post(
            f"/api/companies/{company_id}/api-keys",
            json={"name": name, "kind": "board"},
            headers=ADMIN,
        )
        assert response.status_code == 201, response.text
        key: str = response.json()["key"]
        return key

    return make


@pytest.fixture
def company(make_company: Callable[..., dict[str, Any]]) -> str:
    """A fresh company's id (the workspace handler tests' company)."""
    return str(make_company()["id"])


@pytest.fixture
def board(company: str, make_board_key: Callable[[str], str]) -> dict[str, str]:
    """Headers authenticating with a board key of ``company``."""
    return bearer(make_board_key(company))
