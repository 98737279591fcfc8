"""``CLIPYARD_EVENT_REPLICAS`` reaches ``WS_EVENTS`` through the service lifecycle, on a cluster."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import nats.js.errors
import pytest
from nats.js.api import StreamInfo

from contracts.subjects import EVENT_STREAM
from eventstore import ServiceApplication
from natsbus import connect
from servicekit import ServiceSettings, ServiceSpec, start_service
from testkit.nats_cluster import NatsCluster

pytestmark = pytest.mark.integration


class Quiet(ServiceApplication):
    """A service that stores nothing: only its start matters here."""

    def init_read_models(self) -> None:
        self.seen = 0

    def project(self, domain_event: Any) -> None:
        self.seen += 1

    def read_models(self) -> dict[str, Any]:
        return {"seen": self.seen}


SPEC = ServiceSpec(
    token="controller",
    name="quiet",
    version="0.0.1",
    application_class=Quiet,
    to_contract=lambda _event: None,
)


@pytest.fixture
async def no_stream(nats_cluster: NatsCluster) -> AsyncIterator[None]:
    """No ``WS_EVENTS`` on the cluster before and after the test."""
    nc = await connect(nats_cluster.url, name="replicas-tests")
    with contextlib.suppress(nats.js.errors.NotFoundError):
        await nc.jetstream().delete_stream(EVENT_STREAM)
    try:
        yield
    finally:
        with contextlib.suppress(nats.js.errors.NotFoundError):
            await nc.jetstream().delete_stream(EVENT_STREAM)
        await nc.close()


async def started_stream(settings: ServiceSettings) -> StreamInfo:
    """Start the service with ``settings``, read the event stream, stop it."""
    async with AsyncExitStack() as stack:
        runtime = await start_service(SPEC, settings, stack, asyncio.Event())
        return await runtime.js.stream_info(EVENT_STREAM)


@pytest.mark.usefixtures("no_stream")
async def test_the_replicas_setting_creates_the_stream_at_r3_and_a_restart_keeps_it(
    tmp_path: Path, nats_cluster: NatsCluster
) -> None:
    env = {
        "CLIPYARD_HOME": str(tmp_path),
        "CLIPYARD_STORE": "memory",
        "CLIPYARD_NATS_URL": nats_cluster.url,
    }
    settings = ServiceSettings.from_env("quiet", {**env, "CLIPYARD_EVENT_REPLICAS": "3"})
    assert settings.event_replicas == 3
    info = await started_stream(settings)
    assert info.config.num_replicas == 3
    assert info.cluster is not None
    assert len(info.cluster.replicas or []) == 2  # a leader and two followers
    # The service restarts with the embedded defaults and a week's retention: still R3, 30 days.
    restarted = ServiceSettings.from_env("quiet", {**env, "CLIPYARD_EVENT_RETENTION_DAYS": "7"})
    assert restarted.event_replicas == 1
    again = await started_stream(restarted)
    assert again.config.num_replicas == 3
    assert again.config.max_age == 30 * 86400.0
    assert again.created == info.created
