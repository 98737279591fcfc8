"""Two gateways on one store converge within a second; a service restarted with another retention
setting leaves WS_EVENTS at R3 (issue 17). One cluster for both (its start is most of the time)."""

from __future__ import annotations

import signal

import pytest

from contracts.subjects import EVENT_STREAM
from tests.cluster.clusterutil import Cluster, bearer, board_key, new_company, until

pytestmark = pytest.mark.cluster


async def test_gateways_converge_and_a_restart_with_another_retention_leaves_the_stream_at_r3(
    cluster: Cluster,
) -> None:
    await _a_key_made_on_one_gateway_works_on_the_other_and_its_revocation_reaches_both(cluster)
    await _a_restart_with_another_retention_leaves_the_stream_at_r3(cluster)


async def _a_key_made_on_one_gateway_works_on_the_other_and_its_revocation_reaches_both(
    cluster: Cluster,
) -> None:
    a, b = cluster.gateways
    company = await new_company(a, "Replicated Keys")
    key = await board_key(a, company["id"])
    board = bearer(key["key"])
    path = f"/api/companies/{company['id']}"

    async def works_on_b() -> bool:
        return (await b.get(path, headers=board)).status_code == 200

    seen = await until(works_on_b, 1.0, "a key created on gateway A accepted by gateway B")
    # Revoked on B: refused by A within a second, and from then on.
    revoked = await b.delete(f"/api/api-keys/{key['id']}")
    assert revoked.status_code == 204, revoked.text

    async def refused_on_a() -> bool:
        return (await a.get(path, headers=board)).status_code == 401

    gone = await until(refused_on_a, 1.0, "a key revoked on gateway B refused by gateway A")
    for _ in range(5):
        assert (await a.get(path, headers=board)).status_code == 401
    # Ten companies made on A are all listed by B.
    made = {(await new_company(a, f"Listed {n}"))["id"] for n in range(10)}

    async def all_listed_on_b() -> bool:
        answer = await b.get("/api/companies")
        return made <= {c["id"] for c in answer.json()}

    await until(all_listed_on_b, 1.0, "companies created on A listed by B")
    print(f"\nkey seen on B after {seen * 1000:.0f} ms, revocation on A after {gone * 1000:.0f} ms")


async def _a_restart_with_another_retention_leaves_the_stream_at_r3(cluster: Cluster) -> None:
    js = cluster.nc.jetstream()
    before = await js.stream_info(EVENT_STREAM)
    assert before.config.num_replicas == 3
    replica = cluster.stack.replica("heartbeat-controller", 1)
    replica.env["CLIPYARD_EVENT_RETENTION_DAYS"] = "1"  # shorter than the stream's 30 days
    replica.env["CLIPYARD_EVENT_REPLICAS"] = "1"  # and a lone server's replicas
    await cluster.stack.restart("heartbeat-controller", 1)
    after = await js.stream_info(EVENT_STREAM)
    assert after.config.num_replicas == 3
    assert after.config.max_age == before.config.max_age
    assert after.cluster is not None
    assert len(after.cluster.replicas or []) == 2  # the leader and two followers
    # A replica of another service, killed and restarted, changes nothing either.
    cluster.stack.kill("git-credentials", 2, signal.SIGKILL)
    await cluster.stack.restart("git-credentials", 2)
    assert (await js.stream_info(EVENT_STREAM)).config.num_replicas == 3
