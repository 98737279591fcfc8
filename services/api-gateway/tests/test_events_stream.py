"""The company event stream (SSE): filtering, ``?types=``, ``Last-Event-ID``, keep-alives, stop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
from litestar.testing import AsyncTestClient

from api_gateway.app import create_app
from api_gateway.application import GatewayApplication
from api_gateway.controllers.events import company_events
from api_gateway.http.dependencies import Gateway, StreamedEvent
from api_gateway.settings import GatewaySettings
from eventstore import StoreExecutor

ADMIN = {"Authorization": "Bearer admin-key-for-tests-0123456789"}


def _event(sequence: int, type_: str, company_id: str | None) -> StreamedEvent:
    body = {"type": type_, "companyId": company_id, "eventId": f"e{sequence}", "name": "x"}
    return StreamedEvent(sequence, f"ws.evt.{type_.rsplit('.', 1)[0]}", msgspec.json.encode(body))


@pytest.fixture
async def aclient(
    application: GatewayApplication, bus: Any, settings: GatewaySettings
) -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(application=application, bus=bus, settings=settings)
    async with AsyncTestClient(app) as client:
        yield client


async def _company(client: AsyncTestClient[Any], name: str = "Acme") -> str:
    response = await client.post("/api/companies", json={"name": name}, headers=ADMIN)
    company_id: str = response.json()["id"]
    return company_id


async def _read(client: AsyncTestClient[Any], url: str, **kwargs: Any) -> list[dict[str, str]]:
    """The SSE messages of a stream that ends (the fake's events run out)."""
    messages: list[dict[str, str]] = []
    current: dict[str, str] = {}
    async with client.stream("GET", url, headers={**ADMIN, **kwargs}) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if not line:
                if current:
                    messages.append(current)
                current = {}
                continue
            field, _, value = line.partition(": ")
            current[field] = current.get(field, "") + value
    if current:
        messages.append(current)
    return messages


async def test_only_the_companys_events_with_sequence_ids(
    aclient: AsyncTestClient[Any], bus: Any
) -> None:
    acme, globex = await _company(aclient, "Acme"), await _company(aclient, "Globex")
    bus.stream = [
        _event(3, "company.created.v1", acme),
        _event(4, "company.created.v1", globex),
        _event(5, "api_key.created.v1", acme),
        _event(6, "operation.finished.v1", None),
    ]
    messages = await _read(aclient, f"/api/companies/{acme}/events/stream")
    events = [m for m in messages if "data" in m]
    assert [(m["id"], m["event"]) for m in events] == [
        ("3", "company.created.v1"),
        ("5", "api_key.created.v1"),
    ]
    assert msgspec.json.decode(events[0]["data"])["companyId"] == acme
    # The stream starts with a comment and the retry hint, and followed live (no start given).
    assert messages[0] == {"": "connected", "retry": "2000"}
    assert bus.stream_starts == [None]


async def test_types_filter_and_last_event_id(aclient: AsyncTestClient[Any], bus: Any) -> None:
    acme = await _company(aclient)
    bus.stream = [
        _event(3, "company.created.v1", acme),
        _event(5, "api_key.created.v1", acme),
        _event(8, "api_key.revoked.v1", acme),
    ]
    messages = await _read(
        aclient,
        f"/api/companies/{acme}/events/stream?types=api_key.revoked.v1,api_key.created.v1",
        **{"Last-Event-ID": "5"},
    )
    assert [m["id"] for m in messages if "data" in m] == ["8"]
    assert bus.stream_starts == [5]


@pytest.mark.parametrize(
    ("types", "passed"),
    [
        ("run", ["1", "2", "4"]),  # an aggregate: every type of it
        ("run.queued", ["1"]),  # a type without version: every version of it
        ("run.finished.v1,slot", ["3", "4"]),
        ("run.finished.v1, slot.granted", ["3", "4"]),
    ],
)
async def test_types_names_types_types_without_version_and_aggregates(
    aclient: AsyncTestClient[Any], bus: Any, types: str, passed: list[str]
) -> None:
    acme = await _company(aclient)
    bus.stream = [
        _event(1, "run.queued.v1", acme),
        _event(2, "run.started.v1", acme),
        _event(3, "slot.granted.v1", acme),
        _event(4, "run.finished.v1", acme),
        _event(5, "workspace.realized.v1", acme),
    ]
    messages = await _read(aclient, f"/api/companies/{acme}/events/stream?types={types}")
    assert [m["id"] for m in messages if "data" in m] == passed


async def test_an_unknown_type_says_what_is_accepted(aclient: AsyncTestClient[Any]) -> None:
    acme = await _company(aclient)
    response = await aclient.get(
        f"/api/companies/{acme}/events/stream?types=run,Provisioned", headers=ADMIN
    )
    assert response.status_code == 400
    message = response.json()["error"]
    assert "'Provisioned' (workspace.provisioned: recorded in audit trails only" in message
    assert "types without their version (workspace.realized) or aggregates" in message
    assert "'run'" not in message


@pytest.mark.parametrize(
    ("query", "headers", "field"),
    [
        ("?types=company.created.v1,workspace.vanished.v9", {}, "types"),
        ("?types=Run", {}, "types"),
        ("?types=company.created.v1.extra", {}, "types"),
        ("", {"Last-Event-ID": "minus-one"}, "Last-Event-ID"),
        ("", {"Last-Event-ID": "-1"}, "Last-Event-ID"),
        ("", {"Last-Event-ID": str(2**63)}, "Last-Event-ID"),
        ("", {"Last-Event-ID": "9" * 40}, "Last-Event-ID"),
        ("", {"Last-Event-ID": ""}, "Last-Event-ID"),
    ],
)
async def test_bad_filters_are_400(
    aclient: AsyncTestClient[Any], bus: Any, query: str, headers: dict[str, str], field: str
) -> None:
    acme = await _company(aclient)
    response = await aclient.get(
        f"/api/companies/{acme}/events/stream{query}", headers={**ADMIN, **headers}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "validation_failed"
    assert response.json()["details"]["fields"][0]["field"] == field
    assert bus.stream_starts == []


async def test_another_company_or_no_key_is_refused(
    aclient: AsyncTestClient[Any], bus: Any
) -> None:
    acme, globex = await _company(aclient, "Acme"), await _company(aclient, "Globex")
    response = await aclient.post(
        f"/api/companies/{acme}/api-keys", json={"name": "b", "kind": "board"}, headers=ADMIN
    )
    key = {"Authorization": f"Bearer {response.json()['key']}"}
    other = await aclient.get(f"/api/companies/{globex}/events/stream", headers=key)
    assert other.status_code == 404
    anonymous = await aclient.get(f"/api/companies/{acme}/events/stream")
    assert anonymous.status_code == 401
    assert bus.stream_starts == []


async def test_an_idle_stream_gets_keep_alives_and_ends_when_the_gateway_stops(
    application: GatewayApplication, bus: Any, settings: GatewaySettings
) -> None:
    # Driven directly: the test transport buffers whole responses, so an endless stream is
    # followed at the generator that feeds ServerSentEvent.
    gateway = Gateway(
        application=application,
        executor=StoreExecutor(),
        bus=bus,
        settings=settings,
        stopping=asyncio.Event(),
    )
    bus.stream = [_event(2, "company.created.v1", "other"), _event(3, "company.created.v1", "c1")]
    bus.hold_stream_open = True

    async def still_allowed() -> None:
        return None

    stream = company_events(gateway, "c1", None, None, recheck=still_allowed)
    first = await anext(stream)
    assert (first.comment, first.retry) == ("connected", 2000)
    event = await anext(stream)
    assert (event.id, event.event) == (3, "company.created.v1")
    # Nothing more arrives: keep-alive comments, one per interval.
    for _ in range(2):
        assert (await anext(stream)).comment == "keep-alive"
    # The gateway stops: the stream ends and the consumer is closed.
    gateway.stopping.set()
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    await asyncio.sleep(0)
    assert bus.streams_closed == 1
    gateway.executor.close()
