"""The stops other parts of Clipyard ask for: the archive saga's ``StopWorkspaceRuntimeServices``
(every live service of the workspace and of every target whose directory lies inside it, the
others untouched, the runtime-control lease released) and ``StopAllRuntimeServices`` of
``clipyard up`` on Ctrl-C (everything on the node)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from bus_world import BOARD, OPERATOR, Sup, Upstream, agent, eventually, http_service, runtime

from contracts import subjects
from contracts.base import Accepted, Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import (
    ListWorkspaceOperations,
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.execution_views import WorkspaceOperation
from contracts.runtime_commands import ControlRuntime
from contracts.runtime_subjects import runtime_control
from contracts.service import StopAllRuntimeServices, StopAllRuntimeServicesResult
from contracts.workspace_config import PortSpec, TcpReadiness
from contracts.workspace_subjects import stop_workspace_runtime_services, workspace_operations
from contracts.workspace_views import Page
from runtime_supervisor.adapters.process import proc_start_time
from runtime_supervisor.adapters.process.inspect import proc_stat

pytestmark = pytest.mark.integration

SAGA = Principal(company_id="c-acme", actor=Actor(type="system", id="workspace-realizer"))


def sleeper(name: str) -> Any:
    return http_service(name, command="exec sleep 300", port=None, readiness=None)


async def test_stop_workspace_stops_its_services_and_those_inside_it_only(
    start_supervisor: Any, upstream: Upstream, sup: Sup, tmp_path: Path
) -> None:
    await start_supervisor()
    # Isolated worktrees: each workspace owns its directory (not the project's checkout).
    repo, archived_dir, other_dir = tmp_path / "repo", tmp_path / "ws-a", tmp_path / "ws-b"
    (archived_dir / "packages" / "api").mkdir(parents=True)
    other_dir.mkdir()
    repo.mkdir()
    pw = await upstream.project_workspace(str(repo), runtime(sleeper("web")))
    archived = await upstream.workspace(str(archived_dir), pw=pw)
    other = await upstream.workspace(str(other_dir), pw=pw)
    # A project workspace whose checkout lies inside the archived workspace's directory.
    inner = await upstream.project_workspace(
        str(archived_dir / "packages" / "api"), runtime(sleeper("api"))
    )
    for ws in (archived, other):
        await sup.known(ws)
    await sup.known(pw=inner)
    run = await upstream.run_started(archived, "agent-a")
    # The inner one starts first: once the worktree is the company's, nothing starts inside it
    # (a link planted there could lead root anywhere; docs/design/isolation.md).
    c = (await sup.ok_control("start", pw=inner))["runtimeServices"][0]
    a = (await sup.ok_control("start", archived))["runtimeServices"][0]
    b = (await sup.ok_control("start", other))["runtimeServices"][0]
    # An agent's run holds the archived workspace's runtime-control lease.
    leased = await sup.control("start", archived, principal=agent("agent-a", run))
    assert leased.result["lease"]["outcome"] == "claimed"

    result = await sup.bus.call(
        stop_workspace_runtime_services("local"),
        StopWorkspaceRuntimeServices(principal=SAGA, workspace_id=archived),
        StopWorkspaceRuntimeServicesResult,
        timeout=30,
    )

    # Both stopped; the one to start again elsewhere (a drain) is the workspace's own.
    assert result == StopWorkspaceRuntimeServicesResult(
        workspace_id=archived, stopped=2, stopped_commands=[a["workspaceCommandId"]]
    )
    assert proc_start_time(a["pid"]) is None
    assert proc_start_time(c["pid"]) is None
    assert proc_start_time(b["pid"]) is not None
    assert (await sup.row(archived, a["id"])).status == "stopped"
    assert (await sup.row(other, b["id"])).status == "running"
    # The stop is the archived workspace's teardown step.
    page = await sup.bus.call(
        workspace_operations("supervisor"),
        ListWorkspaceOperations(principal=SAGA, workspace_id=archived),
        Page[WorkspaceOperation],
    )
    teardown = page.items[-1]
    assert (teardown.phase, teardown.status) == ("workspace_teardown", "succeeded")
    assert teardown.metadata["reason"] == "workspace archived"
    assert sorted(teardown.metadata["runtimeServiceIds"]) == sorted([a["id"], c["id"]])
    # The lease went with the archive: another agent's run may take it now.
    run_b = await upstream.run_started(archived, "agent-b")

    async def claim() -> Ok | None:
        reply = await sup.control("stop", archived, principal=agent("agent-b", run_b))
        return reply if isinstance(reply, Ok) else None

    claimed = await eventually(claim, what="agent-b's run holding the workspace")
    assert claimed.result["lease"]["outcome"] == "claimed"


async def test_stop_workspace_of_a_workspace_it_never_heard_of_stops_nothing(
    start_supervisor: Any, sup: Sup
) -> None:
    await start_supervisor()

    result = await sup.bus.call(
        stop_workspace_runtime_services("local"),
        StopWorkspaceRuntimeServices(principal=SAGA, workspace_id="w-unknown"),
        StopWorkspaceRuntimeServicesResult,
        timeout=10,
    )

    assert result == StopWorkspaceRuntimeServicesResult(workspace_id="w-unknown", stopped=0)


async def test_stop_all_stops_every_service_of_the_node(
    start_supervisor: Any, upstream: Upstream, sup: Sup, tmp_path: Path
) -> None:
    await start_supervisor(CLIPYARD_NODE_ID="node-a")
    sup.node = upstream.node = "node-a"
    pids = []
    for name in ("one", "two"):
        directory = tmp_path / name
        directory.mkdir()
        pw = await upstream.project_workspace(str(directory), runtime(sleeper("s1"), sleeper("s2")))
        ws = await upstream.workspace(str(directory), pw=pw)
        await sup.known(ws)
        pids += [r["pid"] for r in (await sup.ok_control("start", ws))["runtimeServices"]]
    assert len(pids) == 4

    result = await sup.bus.call(
        subjects.command("runtime_service", "stop_all", "node-a"),
        StopAllRuntimeServices(principal=OPERATOR, node="node-a"),
        StopAllRuntimeServicesResult,
        timeout=30,
    )

    assert result == StopAllRuntimeServicesResult(
        node="node-a", services_stopped=4, slots_stopped=0
    )
    assert all(proc_start_time(pid) is None for pid in pids)


async def test_archiving_a_shared_workspace_stops_only_what_it_started_and_no_other_run_holds(
    start_supervisor: Any, upstream: Upstream, sup: Sup, tmp_path: Path
) -> None:
    await start_supervisor()
    repo = tmp_path / "repo"
    repo.mkdir()
    own = http_service("own", command="exec sleep 300", port=None, readiness=None,
                       reuse_scope="execution_workspace")  # fmt: skip
    pw = await upstream.project_workspace(str(repo), runtime(sleeper("web"), own))
    # Two shared workspaces on the project's checkout: neither owns the directory.
    first = await upstream.workspace(str(repo), pw=pw, mode="shared_workspace")
    second = await upstream.workspace(str(repo), pw=pw, mode="shared_workspace")
    for ws in (first, second):
        await sup.known(ws)
    await sup.known(pw=pw)
    run_1 = await upstream.run_started(first, "agent-1")
    run_2 = await upstream.run_started(second, "agent-2")
    await sup.run_copied(second, run_2, "agent-2")  # the archive looks up whose run holds what
    started = (await sup.ensure(first, run_1)).result["runtimeServices"]
    web, own_1 = (next(r for r in started if r["serviceName"] == n) for n in ("web", "own"))
    again = (await sup.ensure(second, run_2, agent_id="agent-2")).result["runtimeServices"]
    own_2 = next(r for r in again if r["serviceName"] == "own")
    # The second workspace's run reuses (and holds) the web service the first one started.
    assert next(r for r in again if r["serviceName"] == "web")["id"] == web["id"]
    # The project workspace itself runs its own instance of "own" in the same checkout.
    pw_own = next(r for r in (await sup.ok_control("start", pw=pw))["runtimeServices"]
                  if r["serviceName"] == "own")  # fmt: skip
    assert pw_own["id"] not in (own_1["id"], own_2["id"])

    result = await sup.bus.call(
        stop_workspace_runtime_services("local"),
        StopWorkspaceRuntimeServices(principal=SAGA, workspace_id=first),
        StopWorkspaceRuntimeServicesResult,
        timeout=30,
    )

    assert result == StopWorkspaceRuntimeServicesResult(
        workspace_id=first, stopped=1, stopped_commands=[own_1["workspaceCommandId"]]
    )
    assert proc_start_time(own_1["pid"]) is None
    for kept in (web, own_2, pw_own):
        assert proc_start_time(kept["pid"]) is not None, kept["serviceName"]
    assert (await sup.row(first, own_1["id"])).status == "stopped"
    assert (await sup.row(second, web["id"])).status == "running"


STUBBORN = "trap '' TERM; while :; do sleep 0.1; done"
"""Ignores SIGTERM: only the SIGKILL after the grace period ends it."""


async def test_stop_all_drains_the_node_cancels_starts_in_flight_and_stops_in_parallel(
    start_supervisor: Any, upstream: Upstream, sup: Sup, tmp_path: Path
) -> None:
    await start_supervisor(CLIPYARD_NODE_ID="node-a", CLIPYARD_RUNTIME_STOP_GRACE="4")
    sup.node = upstream.node = "node-a"
    stubborn = [http_service(n, command=STUBBORN, port=None, readiness=None) for n in "ab"]
    never_ready = http_service("slow", command="exec sleep 300", port=PortSpec(type="auto"),
                               readiness=TcpReadiness(timeout_sec=120))  # fmt: skip
    directories = []
    for name in ("busy", "slow"):
        directories.append(tmp_path / name)
        directories[-1].mkdir()
    busy_pw = await upstream.project_workspace(str(directories[0]), runtime(*stubborn))
    busy = await upstream.workspace(str(directories[0]), pw=busy_pw)
    slow_pw = await upstream.project_workspace(str(directories[1]), runtime(never_ready))
    slow = await upstream.workspace(str(directories[1]), pw=slow_pw)
    for ws in (busy, slow):
        await sup.known(ws)
    pids = [r["pid"] for r in (await sup.ok_control("start", busy))["runtimeServices"]]
    command = ControlRuntime(principal=BOARD, workspace_id=slow, action="start")
    accepted = await sup.bus.request(runtime_control("node-a"), command, timeout=3)
    assert isinstance(accepted, Accepted), accepted
    waiting = await eventually(lambda: _spawned(sup, slow), 10, "the slow start spawned")

    began = time.monotonic()
    result = await sup.bus.call(
        subjects.command("runtime_service", "stop_all", "node-a"),
        StopAllRuntimeServices(principal=OPERATOR, node="node-a"),
        StopAllRuntimeServicesResult,
        timeout=30,
    )
    took = time.monotonic() - began

    # Two services needing the full grace period (4 s): one after the other would take 8 s.
    assert took < 7, took
    assert result == StopAllRuntimeServicesResult(
        node="node-a", services_stopped=3, slots_stopped=0
    )
    assert all(_ended(pid) for pid in [*pids, waiting.pid])
    cancelled = await sup.row(slow, waiting.id)
    assert cancelled.status == "failed"
    assert "the node is stopping" in (cancelled.last_error or "")
    # Drained: nothing starts on the node any more.
    refused = await sup.error("start", busy)
    assert (refused.code, refused.status) == ("state_conflict", 409)
    assert "The node is stopping" in refused.message
    run = await upstream.run_started(busy, "agent-1")
    ensure = await sup.ensure(busy, run)
    assert isinstance(ensure, ErrorReply)
    assert (ensure.code, ensure.status) == ("state_conflict", 409)
    assert [r.status for r in (await sup.state(busy)).runtime_services] == ["stopped"] * 2


def _ended(pid: int) -> bool:
    """Gone, or a zombie not reaped yet (a SIGKILLed group's orphans wait for the init process)."""
    stat = proc_stat(pid)
    return stat is None or stat.ended


async def _spawned(sup: Sup, ws: str) -> Any:
    rows = (await sup.state(ws)).runtime_services
    return next((r for r in rows if r.status == "starting" and r.pid is not None), None)
