"""The realizer's inbox from the heartbeat-controller and ``requireIsolation``, through a real
nats-server (``build_spec`` with fake host ports): run events published on the controller's
subjects move the workspace's status, and the status events come out on the realizer's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest

from contracts import workspace_subjects as subjects
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import (
    GetExecutionWorkspace,
    RealizeWorkspace,
    UpdateExecutionWorkspace,
)
from contracts.run_events import RunFinished, RunWorkspaceLeased
from contracts.subjects import event_subject
from contracts.workspace_commands import CreateIssue, CreateProject, CreateProjectWorkspace
from contracts.workspace_config import ExecutionWorkspacePolicy, WorkspaceStrategy
from natsbus import BusClient
from servicekit import ServiceSettings, start_service
from testkit.nats_server import start_nats_server
from workspace_realizer.adapters.host import HostPorts, NoCredentials
from workspace_realizer.app import build_spec
from workspace_realizer.settings import RealizerSettings

pytestmark = pytest.mark.integration

COMPANY = "9d6c2c1e-0000-4000-8000-00000000c0de"
BOARD = Principal(company_id=COMPANY, actor=Actor(type="board", id="board-key"))
CONTROLLER = Actor(type="system", id="heartbeat-controller")
RUN = "5a1e0c52-0000-4000-8000-00000000a001"


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[Any]:
    """A nats-server of this test alone (the realizer's memory store starts empty)."""
    server = start_nats_server(store_dir=tmp_path / "nats")
    yield server
    server.stop()


@pytest.fixture
async def stack(
    own_nats: Any,
    tmp_path: Path,
    git: Any,
    commands: Any,
    pull_requests: Any,
    company_created: Any,
) -> AsyncIterator[tuple[BusClient, Any, Any]]:
    env = {
        "CLIPYARD_HOME": str(tmp_path / "home"),
        "CLIPYARD_NATS_URL": own_nats.url,
        "CLIPYARD_STORE": "memory",
    }
    settings = RealizerSettings(
        service=ServiceSettings.from_env("workspace-realizer", env), reaper_interval=3600
    )
    ports = HostPorts(
        git=git, commands=commands, credentials=NoCredentials(), pull_requests=pull_requests
    )
    nc = await nats.connect(own_nats.url)
    async with AsyncExitStack() as exit_stack:
        runtime = await start_service(
            build_spec(settings, ports), settings.service, exit_stack, asyncio.Event()
        )
        await company_created(nc, runtime, COMPANY)
        yield BusClient(nc), runtime, nc
    await nc.drain()


async def _ok(bus: BusClient, subject: str, message: Any) -> Any:
    reply = await bus.request(subject, message, timeout=10.0)
    assert isinstance(reply, Ok), reply
    return reply.result


async def _project(bus: BusClient, tmp_path: Path, mode: str) -> tuple[str, str]:
    """A project whose default mode is ``mode``, with a checkout and an issue."""
    policy = ExecutionWorkspacePolicy(
        default_mode=mode,  # type: ignore[arg-type]
        workspace_strategy=WorkspaceStrategy(type="git_worktree"),
    )
    project = await _ok(bus, subjects.PROJECT_CREATE, CreateProject(
        principal=BOARD, company_id=COMPANY, name=mode, execution_workspace_policy=policy))  # fmt: skip
    (tmp_path / "repo").mkdir(exist_ok=True)
    await _ok(bus, subjects.create_project_workspace("local"), CreateProjectWorkspace(
        principal=BOARD, project_id=project["id"], name="main", cwd=str(tmp_path / "repo")))  # fmt: skip
    issue = await _ok(bus, subjects.ISSUE_CREATE, CreateIssue(
        principal=BOARD, company_id=COMPANY, title="Fix it", project_id=project["id"]))  # fmt: skip
    return project["id"], issue["id"]


def _run_event(kind: type[Any], version: int, **fields: Any) -> Any:
    return kind(
        event_id=f"7b1e0c52-0000-4000-8000-00000000000{version}", aggregate="run",
        aggregate_id=RUN, aggregate_version=version, company_id=COMPANY,
        occurred_at=datetime.now(UTC), actor=CONTROLLER, run_id=RUN, agent_id="agent-1", **fields,
    )  # fmt: skip


async def _status(bus: BusClient, workspace_id: str, wanted: str) -> dict[str, Any]:
    """The workspace once its status is ``wanted`` (the inbox applies events asynchronously)."""
    query = GetExecutionWorkspace(principal=BOARD, workspace_id=workspace_id)
    for _ in range(100):
        workspace: dict[str, Any] = await _ok(bus, subjects.WORKSPACE_GET, query)
        if workspace["status"] == wanted:
            return workspace
        await asyncio.sleep(0.05)
    raise AssertionError(f"the workspace stayed {workspace['status']}, not {wanted}")


async def test_run_events_from_the_controller_move_the_workspace_status(
    stack: Any, tmp_path: Path
) -> None:
    bus, runtime, nc = stack
    _, issue = await _project(bus, tmp_path, "isolated_workspace")
    realized = await _ok(bus, subjects.realize_workspace("local"), RealizeWorkspace(
        principal=BOARD, issue_id=issue, require_isolation=True))  # fmt: skip
    ws = realized["workspace"]["id"]
    # The realizer's public status events, as the supervisor and the UI would see them.
    seen: list[Any] = []
    subject = event_subject("workspace.status_changed.v1", "realizer")

    async def collect(msg: Any) -> None:
        seen.append(msgspec.json.decode(msg.data))

    sub = await nc.subscribe(subject, cb=collect)
    idle = UpdateExecutionWorkspace(principal=BOARD, workspace_id=ws, status="idle")
    await _ok(bus, subjects.update_execution_workspace("local"), idle)
    await _status(bus, ws, "idle")
    js = nc.jetstream()
    leased = _run_event(RunWorkspaceLeased, 2, issue_id=issue, workspace_id=ws)
    lease_subject = event_subject("run.workspace_leased.v1", "controller")
    await js.publish(lease_subject, msgspec.json.encode(leased),
                     headers={"Nats-Msg-Id": "controller:1"})  # fmt: skip
    await _status(bus, ws, "active")
    assert runtime.app.run_holders[ws] == {RUN}
    # A republication of the same notification changes nothing.
    await js.publish(lease_subject, msgspec.json.encode(leased),
                     headers={"Nats-Msg-Id": "controller:1"})  # fmt: skip
    done = _run_event(RunFinished, 3, issue_id=issue, workspace_id=ws, status="succeeded")
    await js.publish(event_subject("run.finished.v1", "controller"), msgspec.json.encode(done),
                     headers={"Nats-Msg-Id": "controller:2"})  # fmt: skip
    await _status(bus, ws, "idle")
    assert ws not in runtime.app.run_holders
    for _ in range(100):
        if len(seen) >= 3:
            break
        await asyncio.sleep(0.05)
    await sub.unsubscribe()
    moves = [(e["fromStatus"], e["toStatus"], e.get("runId")) for e in seen]
    assert moves == [("active", "idle", None), ("idle", "active", RUN), ("active", "idle", RUN)]
    assert "no run holds the workspace" in seen[-1]["reason"]


async def test_require_isolation_refuses_a_shared_project_before_recording_anything(
    stack: Any, tmp_path: Path, git: Any
) -> None:
    bus, runtime, _ = stack
    _, issue = await _project(bus, tmp_path, "shared_workspace")
    before = runtime.app.last_notification_id()
    reply = await bus.request(subjects.realize_workspace("local"), RealizeWorkspace(
        principal=BOARD, issue_id=issue, require_isolation=True), timeout=10.0)  # fmt: skip
    assert isinstance(reply, ErrorReply), reply
    assert (reply.code, reply.status) == ("low_trust_violation", 422)
    assert reply.details == {"issueId": issue, "resolvedMode": "shared_workspace"}
    assert "executionWorkspacePolicy.defaultMode" in reply.message
    # No operation, no workspace, no git.
    assert runtime.app.last_notification_id() == before
    assert git.calls == []
