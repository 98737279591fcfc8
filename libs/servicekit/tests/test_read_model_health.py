# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""A failed read-model projection is counted, logged, and shown by ``$SRV.STATS`` over a real bus."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from uuid import UUID

import msgspec
import nats
import nats.js.errors
import pytest
from eventsourcing.domain import event
from service_under_test import fresh_event_stream, start_test_service

from contracts.service import READ_MODEL_HEALTH_ENDPOINT, ReadModelHealth
from eventstore import ClipyardAggregate, ServiceApplication
from servicekit import ServiceRuntime
from servicekit.health import health_stats, read_model_health

pytestmark = pytest.mark.integration


class Entry(ClipyardAggregate):
    """A line of a ledger; a line that says ``boom`` cannot be projected."""

    @event("Written")
    def __init__(self, text: str) -> None:
        self.text = text


class Ledger(ServiceApplication):
    """Lines by id; projecting a ``boom`` line raises."""

    def init_read_models(self) -> None:
        self.lines: dict[str, str] = {}

    def project(self, domain_event: Any) -> None:
        if isinstance(domain_event, Entry.Written):
            if domain_event.text == "boom":
                raise ValueError("this line cannot be projected")
            self.lines[str(domain_event.originator_id)] = domain_event.text

    def read_models(self) -> dict[str, Any]:
        return {"lines": self.lines}

    def write(self, text: str) -> UUID:
        entry = Entry(text=text)
        self.save(entry)
        return entry.id


@pytest.fixture
async def runtime(tmp_path: Path, nats_server: Any) -> AsyncIterator[ServiceRuntime]:
    await fresh_event_stream(nats_server.url)
    async with AsyncExitStack() as stack:
        yield await start_test_service(stack, tmp_path, nats_server.url, "ledger", Ledger)


async def _stats_health(url: str, name: str) -> ReadModelHealth | None:
    nc = await nats.connect(url)
    try:
        msg = await nc.request(f"$SRV.STATS.{name}", b"", timeout=5)
    finally:
        await nc.close()
    stats = msgspec.json.decode(msg.data)
    data = {e["name"]: e.get("data") for e in stats["endpoints"]}
    assert all(v is None for k, v in data.items() if k != READ_MODEL_HEALTH_ENDPOINT)
    raw = data[READ_MODEL_HEALTH_ENDPOINT]
    return None if raw is None else msgspec.convert(raw, ReadModelHealth)


async def test_a_failed_projection_is_counted_logged_and_reaches_the_stats(
    runtime: ServiceRuntime, nats_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    app = runtime.app
    health = await _stats_health(nats_server.url, "ledger")
    # A lone instance leads: it holds the service's lease with the first token.
    instance = runtime.settings.instance_id
    assert health == ReadModelHealth(
        projection_failures=0,
        notifications_projected=0,
        projected_upto=0,
        instance=instance,
        role="leader",
        leader=instance,
        lease_token=1,
    )
    await runtime.store(app.write, "fine")  # type: ignore[attr-defined]
    with caplog.at_level(logging.WARNING, logger="eventstore.application"):
        await runtime.store(app.write, "boom")  # type: ignore[attr-defined]
    failed = [r for r in caplog.records if r.getMessage() == "read-model projection failed"]
    assert len(failed) == 1
    assert failed[0].levelno >= logging.WARNING
    assert failed[0].service == "controller"
    assert failed[0].event_type == "Entry.Written"
    assert failed[0].projection_failures == 1
    assert failed[0].notification_id == 2

    health = await _stats_health(nats_server.url, "ledger")
    assert health is not None
    assert (health.projection_failures, health.notifications_projected, health.projected_upto) == (
        1,
        2,
        2,
    )
    await runtime.store(app.write, "boom")  # type: ignore[attr-defined]
    health = await _stats_health(nats_server.url, "ledger")
    assert health is not None
    assert health.projection_failures == 2


def test_health_rides_only_on_the_read_model_endpoint(caplog: pytest.LogCaptureFixture) -> None:
    app = Ledger(service="controller")
    app.write("boom")
    assert read_model_health(app).projection_failures == 1
    assert health_stats(app, "audit") is None
    assert health_stats(app, READ_MODEL_HEALTH_ENDPOINT) == {
        "projectionFailures": 1,
        "notificationsProjected": 1,
        "projectedUpto": 1,
        "instance": "",
        "role": "",
        "leader": None,
        "leaseToken": None,
        "otherLeases": {},
    }
    # A rebuild counts afresh, and says so once at WARNING.
    with caplog.at_level(logging.WARNING, logger="eventstore.application"):
        app.rebuild_read_models()
    assert app.projection_failures == 1
    summary = [r for r in caplog.records if r.getMessage().startswith("read models rebuilt")]
    assert [r.levelno for r in summary] == [logging.WARNING]
    assert summary[0].projection_failures == 1
    app.close()
