"""The lease holder of a service stopped past its TTL: another replica takes the work over within
two TTLs; the old holder, resumed, cannot write (refused and logged) and steps down; no event is
published twice (issue 17, item 3)."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter

import pytest

from contracts.subjects import EVENT_STREAM
from tests.cluster.clusterutil import LEASE_TTL, Cluster, new_company, retrying, until
from tests.e2e.agents import agent_config

pytestmark = pytest.mark.cluster

SERVICE = "heartbeat-controller"


async def _msg_ids(cluster: Cluster, token: str) -> Counter[str]:
    """How many times each ``Nats-Msg-Id`` of ``token``'s events is in the stream (read as a
    service user: the CLI's may not read messages)."""
    nc = await cluster.stack.connect("gateway")
    try:
        js = nc.jetstream()
        info = await js.stream_info(EVENT_STREAM)
        seen: Counter[str] = Counter()
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            msg = await js.get_msg(EVENT_STREAM, seq)
            msg_id = (msg.headers or {}).get("Nats-Msg-Id", "")
            if msg_id.startswith(f"{token}:"):
                seen[msg_id] += 1
        return seen
    finally:
        await nc.close()


async def test_a_paused_holder_is_replaced_and_cannot_write_when_it_resumes(
    cluster: Cluster,
) -> None:
    stack = cluster.stack
    holder, token = await cluster.leader(SERVICE)
    assert holder, "one replica leads"
    old = cluster.replica_index(holder)
    other = f"{SERVICE}-{3 - old}"
    log_file = stack.home / "logs" / f"{holder}.log"
    stack.kill(SERVICE, old, signal.SIGSTOP)
    try:

        async def other_leads() -> bool:
            return (await cluster.leader(SERVICE))[0] == other

        took = await until(other_leads, 2 * LEASE_TTL + 1.0, f"{other} takes the lease")
        print(f"\nhandover after SIGSTOP: {took:.2f} s (TTL {LEASE_TTL} s)")
        assert took < 2 * LEASE_TTL + 1.0  # two TTLs, and the time to see it through a ping
        new_token = (await cluster.leader(SERVICE))[1]
        assert new_token is not None
        assert token is not None
        assert new_token > token
        # The new holder does the singleton work: what is saved now is published by it.
        a, _ = cluster.gateways
        company = await new_company(a, "Fenced")
        key = await a.post(
            f"/api/companies/{company['id']}/api-keys", json={"name": "b", "kind": "board"}
        )
        board = {"Authorization": f"Bearer {key.json()['key']}"}
        made = await retrying(  # a request sent to the paused replica answers 503 "retry"
            lambda: a.post(
                f"/api/companies/{company['id']}/agents",
                json={
                    "name": "worker",
                    "adapterType": "process",
                    "adapterConfig": agent_config("ok"),
                },
                headers=board,
            )
        )
        assert made.status_code == 201, made.text

        async def published() -> bool:
            return bool(await _msg_ids(cluster, "controller"))

        await until(published, 3 * LEASE_TTL, "the new holder publishes what is saved")
    finally:
        stack.kill(SERVICE, old, signal.SIGCONT)

    # Resumed: it steps down at its next beat. Whatever it tried to write first (its relay's
    # position, an inbox reaction) is refused and logged; if its beat came first, it wrote
    # nothing and says it gave the lease up. Either way nothing of it lands after the takeover.
    async def stepped_down_in_its_log() -> bool:
        text = log_file.read_text() if log_file.exists() else ""
        return "fenced write refused" in text or "refused renewal" in text

    await until(stepped_down_in_its_log, 3 * LEASE_TTL, f"{holder} refused or stepped down")

    async def stands_by() -> bool:
        rows = {r.instance: r for r in await _rows(cluster)}
        return holder in rows and rows[holder].role == "standby"

    await until(stands_by, 3 * LEASE_TTL, f"{holder} stands by")
    assert (await cluster.leader(SERVICE))[0] == other
    await asyncio.sleep(LEASE_TTL)  # what the resumed relay might still have sent
    ids = await _msg_ids(cluster, "controller")
    assert [msg_id for msg_id, count in ids.items() if count > 1] == []


async def _rows(cluster: Cluster) -> list:  # type: ignore[type-arg]
    from clipyard_cli.bus import service_instances

    return await service_instances(cluster.nc, SERVICE)
