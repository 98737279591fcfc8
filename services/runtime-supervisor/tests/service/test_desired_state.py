"""Desired state over the bus (reference §6.5, case 52; DECISIONS 7): a service configured
``desiredState: manual`` is never started or stopped by start/stop of all services nor by a run,
only when it is named, and stays ``manual`` through it; the workspace's ``desiredState``
aggregates running > manual > stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bus_world import Sup, Upstream, http_service, runtime

from contracts.base import Ok
from runtime_supervisor.adapters.process import proc_start_time

pytestmark = pytest.mark.integration

SLEEPER = "exec sleep 300"


async def _states(sup: Sup, ws: str) -> tuple[str | None, dict[str, str], dict[str, Any]]:
    state = await sup.state(ws)
    rows = {r.service_name: r for r in state.runtime_services}
    return state.desired_state, dict(state.service_states or {}), rows


async def test_case_52_a_manual_service_is_left_alone_by_start_and_stop_of_all(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    services = runtime(
        http_service("A", command=SLEEPER, port=None, readiness=None, desired_state="running"),
        http_service("B", command=SLEEPER, port=None, readiness=None, desired_state="manual"),
    )
    pw = await upstream.project_workspace(str(workdir), services)
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)
    # The configured states hold until the supervisor records any.
    assert (await _states(sup, ws))[1] == {"0": "running", "1": "manual"}

    # Named, the manual service starts; it stays manual.
    await sup.ok_control("start", ws, service_index=1)
    desired, states, rows = await _states(sup, ws)
    assert rows["B"].status == "running"
    assert states["1"] == "manual"
    b_pid = rows["B"].pid

    # Stop all: A (never started) stays stopped, B runs on, untouched and manual.
    await sup.ok_control("start", ws)
    await sup.ok_control("stop", ws)
    desired, states, rows = await _states(sup, ws)
    assert rows["A"].status == "stopped"
    assert (rows["B"].status, rows["B"].pid, rows["B"].desired_state) == (
        "running",
        b_pid,
        "manual",
    )
    assert proc_start_time(b_pid or 0) is not None
    assert (desired, states) == ("manual", {"0": "stopped", "1": "manual"})

    # Start index 0: A runs, the aggregate is running again.
    await sup.ok_control("start", ws, service_index=0)
    desired, states, rows = await _states(sup, ws)
    assert rows["A"].status == "running"
    assert (desired, states) == ("running", {"0": "running", "1": "manual"})

    # Named, the manual service stops; still manual, and a run never starts it.
    await sup.ok_control("stop", ws, service_index=1)
    run = await upstream.run_started(ws, "agent-1")
    reply = await sup.ensure(ws, run)
    assert isinstance(reply, Ok), reply
    assert [r["serviceName"] for r in reply.result["runtimeServices"]] == ["A"]
    desired, states, rows = await _states(sup, ws)
    assert rows["B"].status == "stopped"
    assert (desired, states) == ("running", {"0": "running", "1": "manual"})
    # Start of all services leaves the stopped manual one stopped.
    await sup.ok_control("start", ws)
    assert (await _states(sup, ws))[2]["B"].status == "stopped"
