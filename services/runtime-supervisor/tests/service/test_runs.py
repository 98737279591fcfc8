"""Runs and their services over the bus (reference §6.6, §6.7; case 54): ``EnsureRunServices``
starts or reuses the services whose desired state is ``running``, each leased to the run (never a
``manual`` one); the controller's ``run.finished`` releases the leases: an ephemeral service stops,
a shared ``manual`` one keeps running, an ``idle_timeout`` one stops after ``idleSeconds``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from bus_world import Sup, Upstream, eventually, http_service, runtime

from contracts.base import ErrorReply, Ok
from contracts.workspace_config import StopPolicy
from runtime_supervisor.process import proc_start_time

pytestmark = pytest.mark.integration

SLEEPER = "exec sleep 300"


async def test_case_54_a_finished_run_stops_ephemeral_keeps_shared_and_idles_out_the_rest(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    services = runtime(
        http_service("ephemeral", command=SLEEPER, port=None, readiness=None,
                     lifecycle="ephemeral"),
        http_service("shared", command=SLEEPER, port=None, readiness=None),
        http_service("idle", command=SLEEPER, port=None, readiness=None,
                     stop_policy=StopPolicy(type="idle_timeout", idle_seconds=1)),
    )  # fmt: skip
    pw = await upstream.project_workspace(str(workdir), services)
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    run = await upstream.run_started(ws, "agent-1")

    reply = await sup.ensure(ws, run)

    assert isinstance(reply, Ok), reply
    rows = {r["serviceName"]: r for r in reply.result["runtimeServices"]}
    assert set(rows) == {"ephemeral", "shared", "idle"}
    assert sorted(reply.result["started"]) == sorted(r["id"] for r in rows.values())
    assert all(r["leaseRunIds"] == [run] for r in rows.values())
    assert rows["ephemeral"]["scopeType"] == "run"
    assert rows["ephemeral"]["scopeId"] == run
    assert rows["ephemeral"]["reuseKey"] is None

    await upstream.run_finished(run, ws)

    ephemeral = await sup.wait_status(ws, rows["ephemeral"]["id"], "stopped", timeout=10)
    assert ephemeral.lease_run_ids == []
    assert proc_start_time(rows["ephemeral"]["pid"]) is None
    # The idle one still runs right after the release, then stops once idleSeconds passed.
    idle = await sup.row(ws, rows["idle"]["id"])
    assert idle.lease_run_ids == []
    idle = await sup.wait_status(ws, rows["idle"]["id"], "stopped", timeout=10)
    assert proc_start_time(rows["idle"]["pid"]) is None
    shared = await sup.row(ws, rows["shared"]["id"])
    assert (shared.status, shared.lease_run_ids) == ("running", [])
    assert proc_start_time(rows["shared"]["pid"]) is not None


async def test_a_second_run_reuses_the_healthy_shared_service_and_holds_it_too(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime(http_service()))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    first = await upstream.run_started(ws, "agent-1")
    second = await upstream.run_started(ws, "agent-2")

    one = await sup.ensure(ws, first)
    two = await sup.ensure(ws, second, agent_id="agent-2")

    assert isinstance(one, Ok)
    assert isinstance(two, Ok)
    (started,) = one.result["started"]
    assert two.result["reused"] == [started]
    assert two.result["started"] == []
    (row,) = two.result["runtimeServices"]
    assert row["leaseRunIds"] == [first, second]
    await upstream.run_finished(first, ws)
    await eventually(lambda: _leases(sup, ws, started, [second]), 10, "the first lease released")
    assert (await sup.row(ws, started)).status == "running"


async def _leases(sup: Sup, ws: str, service_id: str, expected: list[str]) -> bool:
    row = await sup.row(ws, service_id)
    return row is not None and row.lease_run_ids == expected


async def test_a_run_starts_only_running_indexes_and_a_failure_releases_its_leases(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    services = runtime(
        http_service("kept", command=SLEEPER, port=None, readiness=None),
        http_service("manual", command=SLEEPER, port=None, readiness=None),
    )
    pw = await upstream.project_workspace(str(workdir), services)
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    # Index 1 is stopped by hand: the run must leave it alone (DECISIONS 7).
    await sup.ok_control("stop", ws, service_index=1)
    run = await upstream.run_started(ws, "agent-1")

    reply = await sup.ensure(ws, run)

    assert isinstance(reply, Ok), reply
    assert [r["serviceName"] for r in reply.result["runtimeServices"]] == ["kept"]
    (kept,) = reply.result["runtimeServices"]

    # Now the config gains a service that cannot start: the next run's ensure fails and
    # releases the lease it took on "kept" (which keeps running: shared, manual policy).
    broken = runtime(
        http_service("kept", command=SLEEPER, port=None, readiness=None),
        http_service("manual", command=SLEEPER, port=None, readiness=None),
        http_service("broken", command="exit 5"),
    )
    other = await upstream.workspace(str(workdir), pw=await upstream.project_workspace(
        str(workdir), broken))  # fmt: skip
    await sup.known(other)
    later = await upstream.run_started(other, "agent-2")
    failed = await sup.ensure(other, later, agent_id="agent-2")
    assert isinstance(failed, ErrorReply)
    assert failed.code == "runtime_service_start_failed"
    state = await sup.state(other)
    assert all(later not in r.lease_run_ids for r in state.runtime_services), state
    await asyncio.sleep(0)
    assert (await sup.row(ws, kept["id"])).status == "running"
