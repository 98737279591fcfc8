"""``clipyard status`` with replicas: a row per instance with its role, who holds each service's
lease (flagged when it does not answer or two claim it), and the event stream's replicas and
leader in a NATS cluster."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import nats
import pytest

from clipyard_cli.bus import InstanceStatus, service_instances
from clipyard_cli.status import format_leases, lease_of, leases_of, run_status
from clipyard_cli.streamstatus import StreamReplica, StreamState, format_stream
from contracts.service import ReadModelHealth
from contracts.subjects import EVENT_STREAM
from eventstore import ServiceApplication
from natsbus.jetstream import ensure_event_stream
from servicekit import ServiceRuntime, ServiceSettings, ServiceSpec, start_service

REALIZER = "workspace-realizer"


def _row(
    instance: str,
    role: str,
    leader: str | None,
    token: int | None = None,
    others: dict[str, int] | None = None,
) -> InstanceStatus:
    health = ReadModelHealth(
        other_leases=others or {},
        projection_failures=0,
        notifications_projected=0,
        projected_upto=0,
        instance=instance,
        role=role,
        leader=leader,
        lease_token=token,
    )
    return InstanceStatus(
        service=REALIZER,
        instance=instance,
        node="local",
        id=f"micro-{instance}",
        version="0.1.0",
        latency_ms=0.5,
        health=health,
    )


def _lease_line(rows: list[InstanceStatus]) -> list[str]:
    return format_leases([lease_of(REALIZER, rows)]).splitlines()


def test_the_lease_is_held_by_the_instance_answering_as_leader() -> None:
    rows = [_row("wr-1", "standby", "wr-2"), _row("wr-2", "leader", "wr-2", 7)]
    lines = _lease_line(rows)
    assert lines[0].split() == ["LEASE", "HELD", "BY", "TOKEN", "NOTE"]
    assert lines[1].split() == [REALIZER, "wr-2", "7"]
    assert len(lines) == 2


def test_a_node_lease_is_shown_under_the_services_with_its_holder() -> None:
    rows = [
        _row("wr-1", "standby", "wr-2", others={"host:local": 3}),
        _row("wr-2", "leader", "wr-2", 7),
    ]
    lines = format_leases(leases_of(REALIZER, rows)).splitlines()
    assert lines[1].split() == [REALIZER, "wr-2", "7"]
    assert lines[2].split() == [REALIZER, "host:local", "wr-1", "3"]
    # Two instances saying they hold it: the newest token first, the other flagged.
    rows.append(_row("wr-3", "standby", "wr-2", others={"host:local": 2}))
    lines = format_leases(leases_of(REALIZER, rows)).splitlines()
    assert lines[2].split()[:4] == [REALIZER, "host:local", "wr-1", "3"]
    assert lines[2].endswith("! also claimed by wr-3")


def test_a_leader_named_by_a_standby_but_not_answering_is_shown_as_such() -> None:
    lines = _lease_line([_row("wr-1", "standby", "wr-2")])
    assert lines[1].split()[:3] == [REALIZER, "wr-2", "-"]
    assert lines[1].endswith("not answering (named by standby wr-1)")


def test_a_free_lease_and_a_service_without_instances() -> None:
    assert _lease_line([_row("wr-1", "standby", None)])[1].endswith(
        "free: no instance holds it now"
    )
    assert lease_of(REALIZER, []).note == "no instance answers"


def test_two_instances_claiming_the_lease_are_flagged_loudly() -> None:
    lines = _lease_line([_row("wr-1", "leader", "wr-1", 3), _row("wr-2", "leader", "wr-2", 4)])
    # The newest token holds it (the fence refuses the other's writes); the other is named.
    assert lines[1].split()[:3] == [REALIZER, "wr-2", "4"]
    assert lines[1].endswith("! 2 CLAIM IT: also wr-1 (token 3)")
    assert lines[2].startswith(f"! {REALIZER}: 2 instances claim its lease at once: ")
    assert "wr-2 (token 4), wr-1 (token 3)" in lines[2]
    assert "wr-1 should step down" in lines[2]


def test_every_replica_of_a_clustered_stream_is_listed_with_its_lag() -> None:
    state = StreamState(
        10,
        1000,
        1,
        10,
        2,
        replicas=3,
        cluster="east",
        leader="n0",
        peers=(
            StreamReplica("n0", leader=True),
            StreamReplica("n1", seen_s=0.25),
            StreamReplica("n2", current=False, lag=12, seen_s=4.0),
        ),
    )
    lines = format_stream("2.10.0", "nats://127.0.0.1:4222", state).splitlines()
    assert lines[2].split() == ["R3", "in", "cluster", "east,", "leader", "n0"]
    assert lines[3].split() == ["REPLICA", "ROLE", "CURRENT", "LAG", "SEEN"]
    assert lines[4].split() == ["n0", "leader", "yes", "0", "-"]
    assert lines[5].split() == ["n1", "follower", "yes", "0", "0.2s", "ago"]
    assert lines[6].split() == ["n2", "follower", "NO", "12", "4.0s", "ago"]
    assert lines[7].startswith("! WS_EVENTS: n2 is not current")
    down = StreamState(
        1,
        1,
        1,
        1,
        0,
        replicas=3,
        cluster="east",
        leader="n0",
        peers=(StreamReplica("n0", leader=True), StreamReplica("n1", offline=True, lag=4)),
    )
    lines = format_stream("2.10.0", "u", down).splitlines()
    assert lines[5].split() == ["n1", "follower", "OFFLINE", "4", "-"]
    assert lines[6].startswith("! WS_EVENTS is kept at R3 but only 2 replicas report")
    assert lines[7].startswith("! WS_EVENTS: n1 (offline) is not current")
    alone = StreamState(1, 1, 1, 1, 0)
    assert format_stream("2.10.0", "u", alone).splitlines()[-1] == (
        "           R1 on a single server (no cluster)"
    )


class Plain(ServiceApplication):
    """A store with nothing in it: the replicas only share its lease."""


async def _start(stack: AsyncExitStack, home: Path, url: str, instance: str) -> ServiceRuntime:
    spec = ServiceSpec(
        token="realizer",
        name=REALIZER,
        version="0.0.1",
        application_class=Plain,
        to_contract=lambda _event: None,
    )
    env = {
        "CLIPYARD_HOME": str(home),
        "CLIPYARD_NATS_URL": url,
        "CLIPYARD_INSTANCE_ID": instance,
        "CLIPYARD_NODE_ID": f"node-{instance[-1]}",
        "CLIPYARD_LEASE_TTL": "0.6",
    }
    settings = ServiceSettings.from_env(REALIZER, env)
    return await start_service(spec, settings, stack, asyncio.Event())


def _cli_env(home: Path, url: str) -> dict[str, str]:
    return {
        "CLIPYARD_HOME": str(home / "cli"),
        "CLIPYARD_NATS_URL": url,
        "CLIPYARD_NATS_USER": "cli",
        "CLIPYARD_NATS_PASSWORD": "unused-without-authorization",
    }


async def _status(home: Path, url: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = await run_status(_cli_env(home, url), out)
    return code, out.getvalue().splitlines()


def _rows(lines: list[str], service: str) -> tuple[list[list[str]], list[str]]:
    """The service's rows of the instance table (split) and its line of the lease table."""
    lease_at = next(i for i, line in enumerate(lines) if line.startswith("LEASE "))
    rows = [line.split() for line in lines[:lease_at] if line.startswith(service + " ")]
    lease = next(line for line in lines[lease_at:] if line.startswith(service + " "))
    return rows, lease


@pytest.fixture
async def replicas(tmp_path: Path, nats_server: Any) -> AsyncIterator[list[AsyncExitStack]]:
    """Two instances of one service sharing its store, each stopped by closing its stack."""
    async with AsyncExitStack() as stack:
        instances = [await stack.enter_async_context(AsyncExitStack()) for _ in range(2)]
        await _start(instances[0], tmp_path, nats_server.url, "realizer-a")
        await _start(instances[1], tmp_path, nats_server.url, "realizer-b")
        yield instances


@pytest.mark.integration
async def test_status_shows_each_replica_and_the_one_leader(
    replicas: list[AsyncExitStack], tmp_path: Path, nats_server: Any
) -> None:
    code, lines = await _status(tmp_path, nats_server.url)
    assert code == 1  # the other services do not run here
    rows, lease = _rows(lines, REALIZER)
    # One row per instance, ordered by instance id: the first started leads, the other stands by.
    assert [row[:4] for row in rows] == [
        [REALIZER, "ok", "realizer-a", "node-a"],
        [REALIZER, "ok", "realizer-b", "node-b"],
    ]
    assert [row[-2:] for row in rows] == [["leader", "ok"], ["standby", "ok"]]
    assert [row[4] for row in rows] == ["0.0.1", "0.0.1"]
    assert all(row[6] == "ms" and float(row[5]) > 0 for row in rows)
    assert lease.split() == [REALIZER, "realizer-a", "1"]
    gateway, gateway_lease = _rows(lines, "api-gateway")
    assert gateway == [["api-gateway", "DOWN", "-", "-", "-", "-", "-", "-"]]
    assert gateway_lease.endswith("no instance answers")
    assert not any(line.startswith("!") for line in lines)
    assert "R1 on a single server (no cluster)" in "\n".join(lines)

    # The leader stops (it releases the lease): the other takes it, with the next token.
    await replicas[0].aclose()
    nc = await nats.connect(nats_server.url)
    try:
        for _ in range(50):
            found = await service_instances(nc, REALIZER, wait=0.1)
            if [(row.instance, row.role) for row in found] == [("realizer-b", "leader")]:
                break
    finally:
        await nc.close()
    code, lines = await _status(tmp_path, nats_server.url)
    rows, lease = _rows(lines, REALIZER)
    assert [(row[2], row[-2]) for row in rows] == [("realizer-b", "leader")]
    assert lease.split() == [REALIZER, "realizer-b", "2"]


@pytest.mark.integration
async def test_status_shows_the_streams_replicas_and_leader_in_a_cluster(
    nats_cluster: Any, tmp_path: Path
) -> None:
    nc = await nats.connect(nats_cluster.urls)
    try:
        js = nc.jetstream()
        await ensure_event_stream(js, duplicate_window=60, max_age=3600, replicas=3, wait=20)
        await js.publish("ws.evt.company.created", b"{}")
        for _ in range(100):  # the followers catch up with the leader
            cluster = (await js.stream_info(EVENT_STREAM)).cluster
            if cluster and cluster.replicas and all(peer.current for peer in cluster.replicas):
                break
            await asyncio.sleep(0.1)
    finally:
        await nc.close()
    _code, lines = await _status(tmp_path, nats_cluster.url)
    at = next(i for i, line in enumerate(lines) if line.startswith(f"jetstream  {EVENT_STREAM}:"))
    assert lines[at].split()[2:4] == ["1", "messages,"]
    summary = lines[at + 1].split()
    assert summary[:4] == ["R3", "in", "cluster", f"{nats_cluster.name},"]
    assert summary[4] == "leader"
    leader = summary[5]
    assert lines[at + 2].split() == ["REPLICA", "ROLE", "CURRENT", "LAG", "SEEN"]
    table = [line.split() for line in lines[at + 3 : at + 6]]
    assert sorted(row[0] for row in table) == ["n0", "n1", "n2"]
    assert [row[:5] for row in table if row[1] == "leader"] == [[leader, "leader", "yes", "0", "-"]]
    followers = [row for row in table if row[1] == "follower"]
    assert len(followers) == 2
    assert all(row[2:4] == ["yes", "0"] and row[-1] == "ago" for row in followers)
    assert not any(line.startswith("!") for line in lines)
