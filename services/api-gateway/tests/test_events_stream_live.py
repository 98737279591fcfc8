"""The event stream while it is open: the credential is checked every second (a revoked key or an
ended or expired session ends it), keep-alives follow this client's writes, and ``Last-Event-ID``
is validated on the bytes a real server hands over."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import msgspec
import pytest
import uvicorn
from litestar import Litestar
from litestar.response import ServerSentEventMessage

from api_gateway.app import create_app
from api_gateway.application import GatewayApplication
from api_gateway.controllers.events import MAX_SEQUENCE, company_events, parse_last_event_id
from api_gateway.domain import GatewayError
from api_gateway.http.dependencies import Gateway, StreamedEvent
from api_gateway.settings import GatewaySettings
from eventstore import StoreExecutor

ADMIN_KEY = "admin-key-for-tests-0123456789"  # the conftest's settings
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
RECHECK = 0.1


@asynccontextmanager
async def serving(app: Litestar) -> AsyncIterator[str]:
    """Serve ``app`` with a real uvicorn on a free port; yield its base URL."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="on", log_config=None, access_log=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "uvicorn did not start"
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 5)


@pytest.fixture
def fast_settings(settings: GatewaySettings) -> GatewaySettings:
    return dataclasses.replace(settings, sse_auth_recheck=RECHECK, sse_keepalive=30.0)


@pytest.fixture
async def live(
    application: GatewayApplication, bus: Any, fast_settings: GatewaySettings
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app under uvicorn, whose event streams never run out of their own."""
    bus.hold_stream_open = True
    app = create_app(application=application, bus=bus, settings=fast_settings)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=5) as client:
        yield client


async def _company_and_board_key(client: httpx.AsyncClient) -> tuple[str, str, str]:
    company = (await client.post("/api/companies", json={"name": "Acme"}, headers=ADMIN)).json()
    created = await client.post(
        f"/api/companies/{company['id']}/api-keys",
        json={"name": "watcher", "kind": "board"},
        headers=ADMIN,
    )
    body = created.json()
    return company["id"], body["id"], body["key"]


def _session_cookie(signed_in: httpx.Response) -> str:
    """``clipyard_session=<id>`` from the sign-in's Set-Cookie (short-lived ones included)."""
    cookie = signed_in.headers["set-cookie"].split(";", 1)[0]
    assert cookie.startswith("clipyard_session=")
    return cookie


async def _open_stream(
    client: httpx.AsyncClient, company_id: str, **headers: str
) -> asyncio.Task[list[str]]:
    """Read the stream's lines in a task that finishes when the server ends the stream."""
    connected = asyncio.Event()

    async def read() -> list[str]:
        lines: list[str] = []
        url = f"/api/companies/{company_id}/events/stream"
        async with client.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                lines.append(line)
                connected.set()
        return lines

    task = asyncio.create_task(read())
    await asyncio.wait_for(connected.wait(), 2)
    await asyncio.sleep(RECHECK * 4)
    assert not task.done(), "the stream ended while its credential still worked"
    return task


async def _eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until ``condition()`` holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.01)


async def test_revoking_the_key_ends_its_open_stream_within_a_second(
    live: httpx.AsyncClient, bus: Any
) -> None:
    company_id, key_id, key = await _company_and_board_key(live)
    reading = await _open_stream(live, company_id, Authorization=f"Bearer {key}")
    revoked = await live.delete(f"/api/api-keys/{key_id}", headers=ADMIN)
    assert revoked.status_code == 204
    lines = await asyncio.wait_for(reading, timeout=1.0)
    assert lines[0] == ": connected"
    assert lines[-2].startswith(": closed: This key (watcher) was revoked")
    # The consumer was stopped too (the stream's cleanup runs as the response ends).
    await _eventually(lambda: bus.streams_closed >= 1)
    assert bus.streams_closed == 1
    # Reconnecting is refused.
    again = await live.get(
        f"/api/companies/{company_id}/events/stream", headers={"Authorization": f"Bearer {key}"}
    )
    assert again.status_code == 401


async def test_signing_out_ends_the_pages_stream(live: httpx.AsyncClient) -> None:
    company_id, _, key = await _company_and_board_key(live)
    signed_in = await live.post("/api/session", json={"key": key})
    assert signed_in.status_code == 200
    cookie = _session_cookie(signed_in)
    reading = await _open_stream(live, company_id, Cookie=cookie)
    signed_out = await live.delete(
        "/api/session", headers={"Cookie": cookie, "X-CSRF-Token": signed_in.json()["csrfToken"]}
    )
    assert signed_out.status_code in (200, 204)
    lines = await asyncio.wait_for(reading, timeout=1.0)
    assert lines[-2].startswith(": closed: This session is not known or has ended")


async def test_an_expiring_session_ends_its_stream(
    application: GatewayApplication, bus: Any, fast_settings: GatewaySettings
) -> None:
    bus.hold_stream_open = True
    ttl = 3.0  # long enough to open the stream and see it stay open on a loaded machine
    settings = dataclasses.replace(fast_settings, session_ttl=ttl)
    app = create_app(application=application, bus=bus, settings=settings)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=5) as client:
        company_id, _, key = await _company_and_board_key(client)
        signed_in = await client.post("/api/session", json={"key": key})
        assert signed_in.status_code == 200
        cookie = _session_cookie(signed_in)
        reading = await _open_stream(client, company_id, Cookie=cookie)
        lines = await asyncio.wait_for(reading, timeout=ttl + 10)
    assert lines[-2].startswith(": closed: This session has expired")


class BusyBus:
    """Another company's events, back to back, forever: one is always waiting in the queue."""

    connected = True

    def __init__(self) -> None:
        self.sent = 0

    async def events(self, *, after_sequence: int | None) -> AsyncIterator[StreamedEvent]:
        while True:
            self.sent += 1
            body = {"type": "company.created.v1", "companyId": "other", "eventId": f"e{self.sent}"}
            yield StreamedEvent(self.sent, "ws.evt.company.created", msgspec.json.encode(body))
            # No pause: the stream's queue stays full, so its next read never waits (a gap in
            # the busy company's events cannot be mistaken for this client's silence).
            await asyncio.sleep(0)


def _gateway(
    application: GatewayApplication, bus: Any, settings: GatewaySettings
) -> Callable[[], Gateway]:
    def make() -> Gateway:
        return Gateway(
            application=application,
            executor=StoreExecutor(),
            bus=bus,
            settings=settings,
            stopping=asyncio.Event(),
        )

    return make


async def test_a_quiet_companys_client_gets_keep_alives_while_others_are_busy(
    application: GatewayApplication, settings: GatewaySettings
) -> None:
    keepalive, every = 0.05, 0.2
    settings = dataclasses.replace(settings, sse_keepalive=keepalive, sse_auth_recheck=every)
    bus = BusyBus()
    gateway = _gateway(application, bus, settings)()
    loop = asyncio.get_running_loop()
    checked: list[float] = []

    async def still_allowed() -> None:
        checked.append(loop.time())

    stream = company_events(gateway, "quiet", None, None, recheck=still_allowed)
    assert isinstance(stream, AsyncGenerator)
    received: list[tuple[float, ServerSentEventMessage]] = []
    try:
        async with asyncio.timeout(20):  # the old rule never gets there: no keep-alive comes
            async for message in stream:
                received.append((loop.time(), message))
                keepalives = sum(m.comment == "keep-alive" for _, m in received)
                if keepalives >= 5 and len(checked) >= 3:
                    break
    finally:
        await stream.aclose()
        gateway.executor.close()
    messages = [m for _, m in received]
    assert messages[0].comment == "connected"
    assert all(m.data is None for m in messages)  # none of the busy company's events
    assert bus.sent > 10 * len(messages), "the other company was busy all along"
    # Keep-alives come although another company's event is always waiting (with the old rule,
    # a keep-alive only after sse_keepalive seconds without any event, none ever came), and no
    # sooner than sse_keepalive after this client's previous write (not one per event).
    written = [t for t, m in received if m.comment in ("connected", "keep-alive")]
    assert all(b - a >= keepalive - 1e-6 for a, b in itertools.pairwise(written))
    # The credential is checked on its own clock too, busy or not (not once per event).
    assert all(b - a >= every - 1e-6 for a, b in itertools.pairwise(checked))


async def test_a_failing_check_fails_closed(
    application: GatewayApplication, bus: Any, settings: GatewaySettings
) -> None:
    settings = dataclasses.replace(settings, sse_keepalive=30.0, sse_auth_recheck=0.05)
    bus.hold_stream_open = True
    gateway = _gateway(application, bus, settings)()

    async def broken() -> None:
        raise OSError("the store thread is gone")

    messages = [m async for m in company_events(gateway, "c1", None, None, recheck=broken)]
    gateway.executor.close()
    assert [m.comment for m in messages] == [
        "connected",
        "closed: the credential could not be checked; reconnect",
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0", 0), (" 42 ", 42), (str(MAX_SEQUENCE), MAX_SEQUENCE), (None, None)],
)
def test_last_event_id_accepts_ascii_sequences(value: str | None, expected: int | None) -> None:
    assert parse_last_event_id(value) == expected


@pytest.mark.parametrize(
    "value", ["²", "1²", "٣", "\uff11\uff12", str(MAX_SEQUENCE + 1), "9" * 5000, "", "+1", "1e3"]
)
def test_last_event_id_refuses_anything_else(value: str) -> None:
    with pytest.raises(GatewayError) as caught:
        parse_last_event_id(value)
    assert caught.value.status == 400


@pytest.fixture
async def served(
    application: GatewayApplication, bus: Any, settings: GatewaySettings
) -> AsyncIterator[tuple[int, str]]:
    """The app under a real uvicorn, and a company id."""
    company = application.create_company("Acme")
    app = create_app(application=application, bus=bus, settings=settings)
    async with serving(app) as url:
        yield int(url.rsplit(":", 1)[1]), company.id


def _raw_get(port: int, path: str, last_event_id: bytes) -> bytes:
    """One HTTP/1.1 request with the header's bytes exactly as given; the whole answer."""
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ADMIN_KEY}\r\n".encode()
        + b"Last-Event-ID: "
        + last_event_id
        + b"\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    "header",
    [
        "²".encode("latin-1"),  # one byte, 0xB2: str.isdigit() says yes, int() says no
        "²".encode(),  # the UTF-8 bytes
        "٣".encode(),
        str(2**64).encode(),
        b"9" * 200,
    ],
)
async def test_a_real_server_answers_400_to_a_bad_last_event_id(
    served: tuple[int, str], header: bytes
) -> None:
    port, company_id = served
    answer = await asyncio.to_thread(
        _raw_get, port, f"/api/companies/{company_id}/events/stream", header
    )
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 400 Bad Request", answer[:300]
    body = msgspec.json.decode(rest.partition(b"\r\n\r\n")[2])
    assert body["code"] == "validation_failed"
    assert body["details"]["fields"][0]["field"] == "Last-Event-ID"


async def test_a_real_server_streams_from_the_largest_sequence(
    served: tuple[int, str], bus: Any
) -> None:
    port, company_id = served
    answer = await asyncio.to_thread(
        _raw_get, port, f"/api/companies/{company_id}/events/stream", str(MAX_SEQUENCE).encode()
    )
    assert answer.startswith(b"HTTP/1.1 200 OK"), answer[:300]
    assert b": connected" in answer
    assert bus.stream_starts == [MAX_SEQUENCE]
