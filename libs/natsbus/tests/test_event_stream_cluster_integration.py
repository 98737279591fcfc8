"""``WS_EVENTS`` on a real three-node cluster: a service never lowers replicas or retention."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

import nats.js.errors
import pytest
from nats.js.api import StreamInfo
from nats.js.client import JetStreamContext

from contracts.subjects import EVENT_STREAM
from natsbus import connect, ensure_event_stream, publish
from natsbus.jetstream import event_stream_config
from testkit.nats_cluster import NatsCluster

pytestmark = pytest.mark.integration

DAY = 86400.0


@pytest.fixture
async def cluster_js(nats_cluster: NatsCluster) -> AsyncIterator[JetStreamContext]:
    """A JetStream context on the cluster, with no ``WS_EVENTS`` before or after the test."""
    nc = await connect(nats_cluster.url, name="stream-cluster-tests")  # a comma list
    js = nc.jetstream()
    with contextlib.suppress(nats.js.errors.NotFoundError):
        await js.delete_stream(EVENT_STREAM)
    try:
        yield js
    finally:
        with contextlib.suppress(nats.js.errors.NotFoundError):
            await js.delete_stream(EVENT_STREAM)
        await nc.close()


def said(records: list[logging.LogRecord]) -> dict[str, tuple[object, ...]]:
    """What the warnings said, by field: (current, wanted, chosen, winner)."""
    return {
        r.__dict__["field"]: tuple(r.__dict__[k] for k in ("current", "wanted", "chosen", "winner"))
        for r in records
        if "field" in r.__dict__
    }


async def copies(js: JetStreamContext, expected: int, timeout: float = 10.0) -> StreamInfo:
    """The stream's info once a leader and ``expected - 1`` current followers hold it."""
    deadline = time.monotonic() + timeout
    while True:
        info = await js.stream_info(EVENT_STREAM)
        cluster = info.cluster
        followers = [p for p in (cluster.replicas or []) if p.current] if cluster else []
        if cluster and cluster.leader and len(followers) == expected - 1:
            return info
        if time.monotonic() > deadline:
            pytest.fail(f"{EVENT_STREAM} never had {expected} current copies: {cluster}")
        await asyncio.sleep(0.05)


async def test_a_service_with_r1_and_a_shorter_retention_leaves_an_r3_stream_alone(
    cluster_js: JetStreamContext, caplog: pytest.LogCaptureFixture
) -> None:
    js = cluster_js
    # Made by hand (an operator, or a service with CLIPYARD_EVENT_REPLICAS=3): R3, 90 days.
    await js.add_stream(event_stream_config(replicas=3, max_age=90 * DAY))
    made = await copies(js, 3)
    ack = await publish(js, "ws.evt.company.created", b"{}", msg_id="gateway:1")

    # A service restarts with the embedded defaults: one replica, a week's retention.
    with caplog.at_level(logging.INFO, logger="natsbus.jetstream"):
        info = await ensure_event_stream(js, replicas=1, max_age=7 * DAY)

    assert info.config.num_replicas == 3
    assert info.config.max_age == 90 * DAY
    after = await copies(js, 3)
    assert after.config.num_replicas == 3
    assert after.config.max_age == 90 * DAY
    assert after.created == made.created
    assert after.state.last_seq == ack.seq
    assert said(caplog.records) == {
        "max_age": (90 * DAY, 7 * DAY, 90 * DAY, "current"),
        "num_replicas": (3, 1, 3, "current"),
    }
    assert all(r.levelno == logging.WARNING for r in caplog.records), caplog.text
    assert "updated stream" not in caplog.text  # nothing had to change: no update at all
    assert "num_replicas differs: the stream has 3, this service wants 1; keeping" in caplog.text


async def test_a_service_asking_r3_raises_an_r1_stream_in_place(
    cluster_js: JetStreamContext, caplog: pytest.LogCaptureFixture
) -> None:
    js = cluster_js
    await ensure_event_stream(js)  # the embedded default: one replica
    assert (await js.stream_info(EVENT_STREAM)).config.num_replicas == 1
    ack = await publish(js, "ws.evt.company.created", b"{}", msg_id="gateway:1")

    with caplog.at_level(logging.INFO, logger="natsbus.jetstream"):
        info = await ensure_event_stream(js, replicas=3)

    assert info.config.num_replicas == 3
    raised = await copies(js, 3)
    assert raised.state.last_seq == ack.seq  # raised in place: nothing lost
    assert said(caplog.records) == {"num_replicas": (1, 3, 3, "wanted")}
    assert "updated stream WS_EVENTS" in caplog.text
    # Asked again, nothing differs: not a line in the log.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="natsbus.jetstream"):
        await ensure_event_stream(js, replicas=3)
    assert caplog.records == []


async def test_more_replicas_than_servers_is_refused_with_the_fix(
    cluster_js: JetStreamContext, caplog: pytest.LogCaptureFixture
) -> None:
    js = cluster_js
    with pytest.raises(nats.js.errors.APIError), caplog.at_level(logging.ERROR):
        await ensure_event_stream(js, replicas=5)
    assert "set CLIPYARD_EVENT_REPLICAS to at most the number of JetStream servers" in caplog.text
    # On an existing stream the refused raise is said, and the stream goes on as it is.
    await ensure_event_stream(js, replicas=3)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="natsbus.jetstream"):
        info = await ensure_event_stream(js, replicas=5)
    assert info.config.num_replicas == 3
    assert "the server refused to change num_replicas" in caplog.text
    assert (await publish(js, "ws.evt.company.created", b"{}")).stream == EVENT_STREAM
