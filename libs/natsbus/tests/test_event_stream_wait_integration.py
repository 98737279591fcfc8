"""A starting service waits for JetStream: a three-node cluster without a quorum has no meta
leader and answers 503 (code 10008) or not at all, until enough of its servers are back."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client

from contracts.subjects import EVENT_STREAM
from natsbus import EventStreamUnavailableError, connect, ensure_event_stream
from natsbus.jetstream import START_WAIT
from testkit.nats_cluster import NatsCluster

pytestmark = pytest.mark.integration

DOWN = [1, 2]
"""The nodes stopped: two of three, so the one left has no quorum."""


@pytest.fixture
async def cluster_nc(nats_cluster: NatsCluster) -> AsyncIterator[Client]:
    """A connection to every node, no ``WS_EVENTS`` before or after, and every node running
    again after the test, whatever it stopped."""
    nc = await connect(nats_cluster.url, name="stream-wait-tests")
    js = nc.jetstream()
    with contextlib.suppress(nats.js.errors.NotFoundError):
        await js.delete_stream(EVENT_STREAM)
    try:
        yield nc
    finally:
        await asyncio.to_thread(nats_cluster.start_nodes, DOWN)
        with contextlib.suppress(nats.js.errors.NotFoundError):
            await js.delete_stream(EVENT_STREAM)
        await nc.close()


def stream_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What ``natsbus.jetstream`` logged (the connection's own disconnect warnings aside)."""
    return [r for r in caplog.records if r.name == "natsbus.jetstream"]


async def without_quorum(cluster: NatsCluster, nc: Client) -> None:
    """Stop two of the three nodes and wait until the one left says JetStream is unavailable."""
    for index in DOWN:
        cluster.stop_node(index)
    probe = nc.jetstream(timeout=0.5)  # until the node left notices, nothing answers
    deadline = time.monotonic() + 20
    while True:
        try:
            await probe.account_info()
        except nats.js.errors.APIError as error:
            if error.err_code == 10008:
                return
        except nats.errors.TimeoutError:
            pass
        assert time.monotonic() < deadline, "JetStream still answers without a quorum"
        await asyncio.sleep(0.1)


async def test_a_start_waits_for_the_cluster_to_have_a_quorum_again(
    nats_cluster: NatsCluster, cluster_nc: Client, caplog: pytest.LogCaptureFixture
) -> None:
    js = cluster_nc.jetstream()
    await without_quorum(nats_cluster, cluster_nc)
    # Within a short wait the cluster stays without a leader: a clear error once it is spent.
    started = time.monotonic()
    with (
        caplog.at_level(logging.WARNING, logger="natsbus.jetstream"),
        pytest.raises(EventStreamUnavailableError, match=r"not available within 1\.5 s") as raised,
    ):
        await ensure_event_stream(js, replicas=3, wait=1.5)
    assert 1.5 <= time.monotonic() - started < 3.0  # the wait bounds it, requests included
    assert "a majority of a cluster's servers are up" in str(raised.value)
    assert [r.levelname for r in stream_records(caplog)] == ["WARNING", "ERROR"]
    # Without a wait, nothing is retried: the first failure is raised as it is.
    with pytest.raises((nats.js.errors.ServiceUnavailableError, nats.errors.TimeoutError)):
        await ensure_event_stream(js, replicas=3)

    # A start's wait: the two nodes come back meanwhile and elect a meta leader; it goes on.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="natsbus.jetstream"):
        ensured = asyncio.create_task(ensure_event_stream(js, replicas=3, wait=START_WAIT))
        await asyncio.sleep(1.0)
        assert not ensured.done()  # waiting, not failed
        started = time.monotonic()
        await asyncio.to_thread(nats_cluster.start_nodes, DOWN)
        info = await asyncio.wait_for(ensured, START_WAIT)
    assert time.monotonic() - started < START_WAIT
    assert info.config.name == EVENT_STREAM
    assert info.config.num_replicas == 3
    assert info.cluster is not None
    assert len([info.cluster.leader, *(info.cluster.replicas or [])]) == 3
    # One warning, saying what it waits for; no error.
    said = stream_records(caplog)
    warnings = [r for r in said if r.levelno == logging.WARNING]
    assert len(warnings) == 1, caplog.text
    assert "JetStream is not available yet" in warnings[0].getMessage()
    assert "meta leader" in warnings[0].getMessage()
    assert not [r for r in said if r.levelno >= logging.ERROR], caplog.text
    assert "JetStream answered after" in caplog.text


async def test_an_error_that_is_an_answer_fails_at_once(
    cluster_nc: Client, caplog: pytest.LogCaptureFixture
) -> None:
    js = cluster_nc.jetstream()
    started = time.monotonic()
    with pytest.raises(nats.js.errors.APIError) as raised, caplog.at_level(logging.WARNING):
        await ensure_event_stream(js, replicas=6, wait=START_WAIT)
    assert time.monotonic() - started < 2.0
    assert not isinstance(raised.value, EventStreamUnavailableError)
    assert "maximum replicas is 5" in str(raised.value.description)
    assert "not available yet" not in caplog.text  # nothing waited for
    assert "maximum replicas is 5" in caplog.text  # logged with the fix, as before
