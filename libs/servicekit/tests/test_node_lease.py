"""A node's lease (``servicekit.node_lease``): the second process claiming a node waits for the
first and, while the first lives, refuses to start naming it; once the first stops (its lease
released) or crashes (it neither answers nor renews), the next one holds it."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from service_under_test import fresh_event_stream, start_test_service

from eventstore import ServiceApplication
from servicekit import ServiceRuntime
from servicekit.node_lease import hold_node_lease, node_lease

pytestmark = pytest.mark.integration


class Nothing(ServiceApplication):
    """A service with no aggregates: only its lease table matters here."""


class Refused(RuntimeError):
    pass


def _refused(holder: str) -> Exception:
    return Refused(f"held by {holder}")


async def _start(stack: AsyncExitStack, home: Path, url: str, instance: str) -> ServiceRuntime:
    env = {"CLIPYARD_INSTANCE_ID": instance, "CLIPYARD_LEASE_TTL": "1"}
    return await start_test_service(stack, home, url, "nodes", Nothing, env)


async def test_a_second_claim_of_a_live_node_is_refused_naming_the_holder(
    tmp_path: Path, nats_server: Any
) -> None:
    await fresh_event_stream(nats_server.url)
    async with AsyncExitStack() as first:
        a = await _start(first, tmp_path, nats_server.url, "node-a-1")
        held = node_lease(a, "node:a")
        await hold_node_lease(held, _refused)
        assert held.fence is not None
        first_token = held.fence.token
        assert held in a.other_leases
        async with AsyncExitStack() as second:
            b = await _start(second, tmp_path, nats_server.url, "node-a-2")
            with pytest.raises(Refused, match="held by node-a-1"):
                await hold_node_lease(node_lease(b, "node:a"), _refused)
            # Another node's lease is its own business.
            await hold_node_lease(node_lease(b, "node:b"), _refused)
    # The first stopped (and released it): the next claim holds it at once.
    async with AsyncExitStack() as third:
        c = await _start(third, tmp_path, nats_server.url, "node-a-3")
        again = node_lease(c, "node:a")
        await hold_node_lease(again, _refused)
        assert again.fence is not None
        assert again.fence.token > first_token


async def test_a_crashed_holders_node_lease_is_taken_over_without_waiting_for_it_to_run_out(
    tmp_path: Path, nats_server: Any
) -> None:
    await fresh_event_stream(nats_server.url)
    async with AsyncExitStack() as stack:
        a = await _start(stack, tmp_path, nats_server.url, "node-a-new")
        # A predecessor that died holding the lease for another minute: not on the bus, not
        # renewing.
        table = a.app.lease_table
        assert await a.store(table.acquire_lease, "node:a", "node-a-dead", 60_000) is not None
        held = node_lease(a, "node:a")
        await hold_node_lease(held, _refused)  # 2 TTLs and a second at most, not 60 s
        assert held.fence is not None
