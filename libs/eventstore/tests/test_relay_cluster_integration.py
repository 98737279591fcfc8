"""The outbox relay on a three-node cluster: a deleted stream comes back with its replicas."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats.js.errors
import pytest
from eventstore_backends import stream_messages
from eventstore_sample import GatewayApp, gateway_contract
from nats.js.client import JetStreamContext

from contracts.subjects import EVENT_STREAM
from eventstore import OutboxRelay, StoreExecutor, StoreSettings, build_application
from natsbus import connect
from testkit.nats_cluster import NatsCluster

pytestmark = pytest.mark.integration


@pytest.fixture
async def cluster_js(nats_cluster: NatsCluster) -> AsyncIterator[JetStreamContext]:
    """A JetStream context on the cluster, with no ``WS_EVENTS`` before or after the test."""
    nc = await connect(nats_cluster.url, name="relay-cluster-tests")
    js = nc.jetstream()
    with contextlib.suppress(nats.js.errors.NotFoundError):
        await js.delete_stream(EVENT_STREAM)
    try:
        yield js
    finally:
        with contextlib.suppress(nats.js.errors.NotFoundError):
            await js.delete_stream(EVENT_STREAM)
        await nc.close()


@pytest.fixture
def app(tmp_path: Path) -> Iterator[GatewayApp]:
    settings = StoreSettings(kind="memory", home=tmp_path / "home")
    application = build_application(GatewayApp, service="gateway", settings=settings)
    try:
        yield application
    finally:
        application.close()


async def test_a_deleted_stream_is_created_again_with_the_services_replicas(
    app: GatewayApp, cluster_js: JetStreamContext, executor: StoreExecutor
) -> None:
    js = cluster_js
    relay = OutboxRelay(
        app,
        js,
        service="gateway",
        to_contract=gateway_contract,
        executor=executor,
        max_backoff=0.2,
        replicas=3,
    )
    await relay.start()
    try:
        company = app.create_company("Acme", "ACME")
        assert await relay.flush(10)
        # The stream disappears under the running relay: it comes back at R3, not R1.
        await js.delete_stream(EVENT_STREAM)
        app.tick(company, 2)
        assert await relay.flush(10)
    finally:
        await relay.stop()
    info = await js.stream_info(EVENT_STREAM)
    assert info.config.num_replicas == 3
    assert [m.headers["Nats-Msg-Id"] for m in await stream_messages(js)] == [
        "gateway:2",
        "gateway:3",
    ]
