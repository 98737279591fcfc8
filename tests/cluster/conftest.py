"""The cluster tier: the replicated control plane of `clipyard cluster up` (three NATS nodes with
JetStream R3, one PostgreSQL, two replicas of api-gateway, heartbeat-controller and git-credentials)
started per test, taken apart on purpose (SIGKILL, SIGSTOP, a NATS node down)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clipyard_cli.clusterprocs import ClusterPorts
from clipyard_cli.clusterstack import ClusterStack
from tests.cluster.clusterutil import LEASE_TTL, Cluster

pytestmark = pytest.mark.cluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A running local cluster (a short lease TTL: handovers in seconds), stopped afterwards."""
    env = {
        **__import__("os").environ,
        "CLIPYARD_LEASE_TTL": str(LEASE_TTL),
        "CLIPYARD_HOME": str(tmp_path / "home"),
    }
    stack = ClusterStack(tmp_path / "home", ports=ClusterPorts.free(), env=env)
    await stack.start()
    try:
        async with Cluster.of(stack) as cluster:
            yield cluster
    finally:
        await stack.stop()
