"""Runs and their services over the bus (reference §6.6, §6.7; case 54): ``EnsureRunServices``
starts or reuses the services whose desired state is ``running``, each leased to the run (never a
``manual`` one); the controller's ``run.finished`` releases the leases: an ephemeral service stops,
a shared ``manual`` one keeps running, an ``idle_timeout`` one stops after ``idleSeconds``."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import BOARD, CONTROLLER, Sup, Upstream, eventually, http_service, runtime

from contracts.base import ErrorReply, Ok, Principal
from contracts.run_events import RunStarted
from contracts.runtime_commands import EnsureRunServices
from contracts.runtime_subjects import ensure_run_services
from contracts.workspace_config import StopPolicy
from runtime_supervisor.adapters.process import proc_start_time

pytestmark = pytest.mark.integration

SLEEPER = "exec sleep 300"
SHARED = http_service("shared", command=SLEEPER, port=None, readiness=None)
IDLE = 2


async def test_case_54_a_finished_run_stops_ephemeral_keeps_shared_and_idles_out_the_rest(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    services = runtime(
        http_service("ephemeral", command=SLEEPER, port=None, readiness=None,
                     lifecycle="ephemeral"),
        http_service("shared", command=SLEEPER, port=None, readiness=None),
        http_service("idle", command=SLEEPER, port=None, readiness=None,
                     stop_policy=StopPolicy(type="idle_timeout", idle_seconds=IDLE)),
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

    # Right after the release the idle one still runs: it stops only once idleSeconds passed.
    released = await eventually(lambda: _leases(sup, ws, rows["idle"]["id"], []), 10,
                                "the idle service's lease released")  # fmt: skip
    assert released.status == "running"
    assert proc_start_time(rows["idle"]["pid"]) is not None
    ephemeral = await sup.wait_status(ws, rows["ephemeral"]["id"], "stopped", timeout=10)
    assert ephemeral.lease_run_ids == []
    assert proc_start_time(rows["ephemeral"]["pid"]) is None
    idle = await sup.wait_status(ws, rows["idle"]["id"], "stopped", timeout=15)
    assert (idle.stopped_at - released.last_used_at).total_seconds() >= IDLE - 0.1
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


async def _leases(sup: Sup, ws: str, service_id: str, expected: list[str]) -> Any:
    row = await sup.row(ws, service_id)
    return row if row is not None and row.lease_run_ids == expected else None


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
    # The second workspace's own "kept" (started by this ensure) lost its lease, and runs on.
    other_kept = next(r for r in state.runtime_services if r.service_name == "kept")
    assert other_kept.id != kept["id"]
    assert (other_kept.status, other_kept.lease_run_ids) == ("running", [])
    assert proc_start_time(other_kept.pid or 0) is not None
    assert (await sup.row(ws, kept["id"])).status == "running"


async def test_a_finished_run_gets_no_lease_and_an_unheard_of_run_is_released_by_its_finish(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime(SHARED))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    finished = await upstream.run_started(ws, "agent-1")
    await upstream.run_finished(finished, ws)
    await sup.run_copied(ws, await upstream.run_started(ws, "agent-9"), "agent-9")

    refused = await sup.ensure(ws, finished)

    assert isinstance(refused, ErrorReply)
    assert (refused.code, refused.status) == ("state_conflict", 409)
    assert "has finished" in refused.message
    assert (await sup.state(ws)).runtime_services == []  # nothing was started for it

    # A run whose run.started has not arrived (yet) is accepted; its run.finished releases it.
    unheard = str(uuid.uuid4())
    reply = await sup.ensure(ws, unheard)
    assert isinstance(reply, Ok), reply
    (row,) = reply.result["runtimeServices"]
    assert row["leaseRunIds"] == [unheard]
    await upstream.run_finished(unheard, ws)
    released = await eventually(lambda: _leases(sup, ws, row["id"], []), 10, "its release")
    assert released.status == "running"  # shared, manual stop policy: it keeps running
    # And it cannot be leased again once finished.
    again = await sup.ensure(ws, unheard)
    assert isinstance(again, ErrorReply)
    assert (again.code, again.status) == ("state_conflict", 409)
    assert (await sup.row(ws, row["id"])).lease_run_ids == []


async def test_a_boards_run_id_must_name_a_running_run_of_its_company(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime(SHARED))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    foreign = str(uuid.uuid4())
    await upstream.publish(RunStarted(**{**upstream.envelope("run", foreign, CONTROLLER),
                                         "company_id": "c-other"}, agent_id="agent-x",
                                      workspace_id=None), "controller")  # fmt: skip
    done = await upstream.run_started(ws, "agent-1")
    await upstream.run_finished(done, ws)
    running = await upstream.run_started(ws, "agent-2")
    await sup.run_copied(ws, running, "agent-2")

    def board(run: str) -> Principal:
        return msgspec.structs.replace(BOARD, run_id=run)

    other_company = await sup.error("start", ws, principal=board(foreign))
    assert (other_company.code, other_company.status) == ("not_found", 404)
    unknown = await sup.error("start", ws, principal=board(str(uuid.uuid4())))
    assert (unknown.code, unknown.status) == ("unprocessable", 422)
    finished = await sup.error("start", ws, principal=board(done))
    assert (finished.code, finished.status) == ("state_conflict", 409)
    assert "has finished" in finished.message
    assert (await sup.state(ws)).runtime_services == []

    (row,) = (await sup.ok_control("start", ws, principal=board(running)))["runtimeServices"]
    assert row["leaseRunIds"] == [running]


async def test_a_reuse_without_a_lease_rearms_the_idle_timer(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    idle = http_service("idle", command=SLEEPER, port=None, readiness=None,
                        stop_policy=StopPolicy(type="idle_timeout", idle_seconds=IDLE))  # fmt: skip
    pw = await upstream.project_workspace(str(workdir), runtime(idle))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    run = await upstream.run_started(ws, "agent-1")
    (row,) = (await sup.ensure(ws, run)).result["runtimeServices"]
    await upstream.run_finished(run, ws)
    await eventually(lambda: _leases(sup, ws, row["id"], []), 10, "the release")

    # The board uses it (no lease): the timer the release armed is replaced by a new one.
    (reused,) = (await sup.ok_control("start", ws))["runtimeServices"]
    assert (reused["id"], reused["status"]) == (row["id"], "running")

    stopped = await sup.wait_status(ws, row["id"], "stopped", timeout=IDLE + 10)
    assert (stopped.stopped_at - stopped.last_used_at).total_seconds() >= IDLE - 0.1
    assert proc_start_time(row["pid"]) is None


async def test_a_run_asking_before_its_workspace_is_copied_here_waits_for_it(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    # The controller asks as soon as the realizer answers; the realizer's workspace.realized may
    # still be on its way through JetStream. The supervisor waits for it instead of a 404.
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime(SHARED))
    await sup.known(pw=pw)
    ws, run = str(uuid.uuid4()), str(uuid.uuid4())
    asking = asyncio.ensure_future(sup.ensure(ws, run))
    await asyncio.sleep(1.0)
    assert not asking.done(), asking.result()  # waiting, not refused
    await upstream.workspace(str(workdir), pw=pw, ws=ws)

    reply = await asyncio.wait_for(asking, 30)

    assert isinstance(reply, Ok), reply
    (row,) = reply.result["runtimeServices"]
    assert (row["serviceName"], row["leaseRunIds"]) == ("shared", [run])


async def test_a_workspace_that_never_arrives_is_still_not_found_within_the_callers_time(
    start_supervisor: Any, sup: Sup
) -> None:
    await start_supervisor()
    command = EnsureRunServices(principal=BOARD, workspace_id=str(uuid.uuid4()),
                                run_id=str(uuid.uuid4()), agent_id="agent-1")  # fmt: skip
    started = time.monotonic()

    reply = await sup.request(ensure_run_services(sup.node), command, timeout=4.0)

    assert isinstance(reply, ErrorReply), reply
    assert (reply.code, reply.status) == ("not_found", 404), reply
    assert time.monotonic() - started < 4.0
