"""The stops other parts of Clipyard ask for: the archive saga's ``StopWorkspaceRuntimeServices``
(every live service of the workspace and of every target whose directory lies inside it, the
others untouched, the runtime-control lease released) and ``StopAllRuntimeServices`` of
``clipyard up`` on Ctrl-C (everything on the node)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bus_world import OPERATOR, Sup, Upstream, agent, eventually, http_service, runtime

from contracts import subjects
from contracts.base import Actor, Ok, Principal
from contracts.execution_commands import (
    ListWorkspaceOperations,
    StopWorkspaceRuntimeServices,
    StopWorkspaceRuntimeServicesResult,
)
from contracts.execution_views import WorkspaceOperation
from contracts.service import StopAllRuntimeServices, StopAllRuntimeServicesResult
from contracts.workspace_subjects import stop_workspace_runtime_services, workspace_operations
from contracts.workspace_views import Page
from runtime_supervisor.process import proc_start_time

pytestmark = pytest.mark.integration

SAGA = Principal(company_id="c-acme", actor=Actor(type="system", id="workspace-realizer"))


def sleeper(name: str) -> Any:
    return http_service(name, command="exec sleep 300", port=None, readiness=None)


async def test_stop_workspace_stops_its_services_and_those_inside_it_only(
    start_supervisor: Any, upstream: Upstream, sup: Sup, tmp_path: Path
) -> None:
    await start_supervisor()
    archived_dir, other_dir = tmp_path / "ws-a", tmp_path / "ws-b"
    (archived_dir / "packages" / "api").mkdir(parents=True)
    other_dir.mkdir()
    pw = await upstream.project_workspace(str(archived_dir), runtime(sleeper("web")))
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
    a = (await sup.ok_control("start", archived))["runtimeServices"][0]
    b = (await sup.ok_control("start", other))["runtimeServices"][0]
    c = (await sup.ok_control("start", pw=inner))["runtimeServices"][0]
    # An agent's run holds the archived workspace's runtime-control lease.
    leased = await sup.control("start", archived, principal=agent("agent-a", run))
    assert leased.result["lease"]["outcome"] == "claimed"

    result = await sup.bus.call(
        stop_workspace_runtime_services("local"),
        StopWorkspaceRuntimeServices(principal=SAGA, workspace_id=archived),
        StopWorkspaceRuntimeServicesResult,
        timeout=30,
    )

    assert result == StopWorkspaceRuntimeServicesResult(workspace_id=archived, stopped=2)
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
    sup.node = "node-a"
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
