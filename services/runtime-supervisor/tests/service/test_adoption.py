"""Supervisor restarts (DECISIONS 7): services outlive a SIGKILLed or SIGTERMed supervisor; the
next one adopts each live one (same pid and process start time: nothing restarted) and can stop
it; one that ended while no supervisor ran is recorded with the exit status its wrapper wrote."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from bus_world import Sup, Upstream, eventually, http_service, runtime

from contracts.workspace_config import StopPolicy
from runtime_supervisor.adapters.process import proc_start_time

pytestmark = pytest.mark.integration

WAIT_FOR_FILE = "while [ ! -f {flag} ]; do sleep 0.05; done; exit {code}"


async def _workspace(upstream: Upstream, sup: Sup, workdir: Path, *services: Any) -> str:
    pw = await upstream.project_workspace(str(workdir), runtime(*services))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    return ws


async def test_a_sigkilled_supervisor_is_replaced_by_one_that_adopts_without_restarting(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    supervisor = await start_supervisor()
    ws = await _workspace(upstream, sup, workdir, http_service())
    (row,) = (await sup.ok_control("start", ws))["runtimeServices"]
    pid, started = row["pid"], proc_start_time(row["pid"])

    supervisor.kill()
    await asyncio.sleep(0.3)
    assert proc_start_time(pid) == started  # the service outlived its supervisor
    await supervisor.start()

    adopted = await sup.wait_status(ws, row["id"], "running")
    assert (adopted.pid, adopted.port) == (pid, row["port"])
    assert proc_start_time(pid) == started  # adopted, not restarted
    state = await sup.state(ws, probe=True)
    assert [(r.id, r.health_status) for r in state.runtime_services] == [(row["id"], "healthy")]

    stopped = await sup.ok_control("stop", ws)

    assert [r["status"] for r in stopped["runtimeServices"]] == ["stopped"]
    assert proc_start_time(pid) is None


async def test_services_that_end_while_no_supervisor_runs_keep_their_real_exit_status(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    supervisor = await start_supervisor()
    crash = http_service(
        "crash", port=None, readiness=None, command=WAIT_FOR_FILE.format(flag="crash.flag", code=7)
    )
    done = http_service("done", port=None, readiness=None,
                        command=WAIT_FOR_FILE.format(flag="done.flag", code=0))  # fmt: skip
    ws = await _workspace(upstream, sup, workdir, crash, done)
    rows = {r["serviceName"]: r for r in (await sup.ok_control("start", ws))["runtimeServices"]}

    supervisor.kill()
    (workdir / "crash.flag").touch()
    (workdir / "done.flag").touch()
    for name in ("crash", "done"):
        await eventually(lambda n=name: _gone(rows[n]["pid"]), 5, f"{name} ending")
    await supervisor.start()

    crashed = await sup.wait_status(ws, rows["crash"]["id"], "failed")
    assert crashed.exit_code == 7
    assert crashed.last_error == "ended while no supervisor watched (exit 7)"
    finished = await sup.wait_status(ws, rows["done"]["id"], "stopped")
    assert finished.exit_code == 0


async def _gone(pid: int) -> bool:
    return proc_start_time(pid) is None


async def test_sigterm_stops_the_supervisor_in_time_and_leaves_services_running(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    supervisor = await start_supervisor()
    ws = await _workspace(upstream, sup, workdir, http_service())
    (row,) = (await sup.ok_control("start", ws))["runtimeServices"]
    started = proc_start_time(row["pid"])

    await supervisor.terminate()  # exit 0 within 5 s, or the test fails

    await asyncio.sleep(0.3)
    assert proc_start_time(row["pid"]) == started
    await supervisor.start()
    adopted = await sup.wait_status(ws, row["id"], "running")
    assert adopted.pid == row["pid"]


async def test_a_run_that_finished_while_the_supervisor_was_down_stops_its_ephemeral_service(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    supervisor = await start_supervisor()
    ephemeral = http_service(
        "scratch", command="exec sleep 300", port=None, readiness=None, lifecycle="ephemeral"
    )
    ws = await _workspace(upstream, sup, workdir, ephemeral)
    run = await upstream.run_started(ws, "agent-1")
    reply = await sup.ensure(ws, run)
    (row,) = reply.result["runtimeServices"]

    supervisor.kill()
    await upstream.run_finished(run, ws)  # waits in the stream for the next supervisor
    assert proc_start_time(row["pid"]) is not None
    await supervisor.start()

    stopped = await sup.wait_status(ws, row["id"], "stopped")
    assert stopped.lease_run_ids == []
    assert proc_start_time(row["pid"]) is None


async def test_an_adopted_idle_timeout_service_no_run_holds_gets_its_idle_timer_again(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    supervisor = await start_supervisor()
    idle = http_service("idle", command="exec sleep 300", port=None, readiness=None,
                        stop_policy=StopPolicy(type="idle_timeout", idle_seconds=3))  # fmt: skip
    ws = await _workspace(upstream, sup, workdir, idle)
    # Started by the board: no run ever held it, and its timer dies with this supervisor.
    (row,) = (await sup.ok_control("start", ws))["runtimeServices"]
    assert (row["leaseRunIds"], row["startedByRunId"]) == ([], None)

    supervisor.kill()
    await supervisor.start()

    stopped = await sup.wait_status(ws, row["id"], "stopped", timeout=20)
    assert stopped.exit_signal == signal.SIGTERM  # stopped by the supervisor, not ended alone
    assert proc_start_time(row["pid"]) is None
