"""A service's inbox through the lifecycle: a poison upstream message is terminated and published
as ``inbox.message_rejected.v1``, an event of a type this build does not know is skipped (not
poison), and later good messages still flow."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest

from contracts.base import Actor
from contracts.events import AnyEvent
from contracts.service import InboxMessageRejected, OperationFinished
from eventstore import ServiceApplication
from servicekit import ServiceSettings, ServiceSpec, start_service

pytestmark = pytest.mark.integration


class ListeningApplication(ServiceApplication):
    """Consumes the controller's events; records each one it handled."""

    def init_read_models(self) -> None:
        self.handled: list[str] = []


async def test_poison_message_is_rejected_published_and_the_inbox_goes_on(
    tmp_path: Path, nats_server: Any
) -> None:
    holder: dict[str, ListeningApplication] = {}

    def handle(app: ListeningApplication, event: Any, tracking: Any) -> None:
        assert app is holder["app"]  # the service's own application, given to the handler
        app.save_with_tracking(tracking=tracking)
        app.handled.append(type(event).__name__)

    spec = ServiceSpec(
        token="realizer",
        name="test-inbox",
        version="0.0.1",
        application_class=ListeningApplication,
        to_contract=lambda _event: None,
        upstreams={"controller": handle},
    )
    settings = ServiceSettings.from_env(
        "test-inbox", {"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_NATS_URL": nats_server.url}
    )
    nc = await nats.connect(nats_server.url)
    rejected: asyncio.Queue[Any] = asyncio.Queue()

    async def collect(msg: Any) -> None:
        await rejected.put(msgspec.json.decode(msg.data, type=AnyEvent))

    await nc.subscribe("ws.evt.inbox.message_rejected.realizer", cb=collect)
    async with AsyncExitStack() as stack:
        runtime = await start_service(spec, settings, stack, asyncio.Event())
        holder["app"] = runtime.app  # type: ignore[assignment]
        js = nc.jetstream()
        # The upstream publishes something no contract describes.
        await js.publish(
            "ws.evt.run.finished", b"{not json", headers={"Nats-Msg-Id": "controller:1"}
        )
        event = await asyncio.wait_for(rejected.get(), 10)
        assert isinstance(event, InboxMessageRejected)
        assert (event.upstream, event.subject) == ("controller", "ws.evt.run.finished")
        assert event.error
        # The next, well-formed message is handled: one poison message does not stop the inbox.
        finished = OperationFinished(
            event_id="1b7e0c52-0000-4000-8000-000000000001",
            aggregate="operation",
            aggregate_id="1b7e0c52-0000-4000-8000-000000000002",
            aggregate_version=2,
            company_id="c-1",
            occurred_at=datetime.now(UTC),
            actor=Actor(type="system", id="heartbeat-controller"),
            kind="run",
            status="succeeded",
        )
        await js.publish(
            "ws.evt.operation.finished.controller",
            msgspec.json.encode(finished),
            headers={"Nats-Msg-Id": "controller:2"},
        )
        for _ in range(100):
            if holder["app"].handled:
                break
            await asyncio.sleep(0.05)
        assert holder["app"].handled == ["OperationFinished"]
        assert holder["app"].position("controller") == 2
        # After a rolling upgrade the controller publishes a type this build does not know: not
        # poison (nothing rejected), its position is recorded and the next event is handled.
        newer = {
            **msgspec.to_builtins(finished),
            "type": "operation.paused.v1",
            "pausedFor": "maintenance",
        }
        await js.publish(
            "ws.evt.operation.paused.controller",
            msgspec.json.encode(newer),
            headers={"Nats-Msg-Id": "controller:3"},
        )
        await js.publish(
            "ws.evt.operation.finished.controller",
            msgspec.json.encode(finished),
            headers={"Nats-Msg-Id": "controller:4"},
        )
        for _ in range(100):
            if len(holder["app"].handled) == 2:
                break
            await asyncio.sleep(0.05)
        assert holder["app"].handled == ["OperationFinished", "OperationFinished"]
        assert holder["app"].position("controller") == 4
        await asyncio.sleep(0.2)  # room for a rejection that must not come
        assert rejected.empty()
    await nc.drain()
