"""The realizer's endpoints through a real nats-server, with fake host ports (``build_spec``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest

from contracts import workspace_subjects as subjects
from contracts.base import Accepted, Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import (
    ArchiveWorkspace,
    GetCloseReadiness,
    GetExecutionWorkspace,
    GetWorkspaceEvents,
    GetWorkspaceHistory,
    GetWorkspaceOperation,
    GetWorkspaceOperationOutput,
    ListExecutionWorkspaces,
    ListWorkspaceOperations,
    RealizeWorkspace,
    StopWorkspaceRuntimeServicesResult,
    UpdateExecutionWorkspace,
)
from contracts.service import GetOperation
from contracts.subjects import service_query
from contracts.workspace_commands import (
    CreateIssue,
    CreateProject,
    CreateProjectWorkspace,
    GetIssue,
    UpdateIssue,
)
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
OTHER = Principal(company_id="another-company", actor=Actor(type="board", id="other-key"))
POLICY = ExecutionWorkspacePolicy(
    default_mode="isolated_workspace",
    workspace_strategy=WorkspaceStrategy(type="git_worktree", provision_command="make setup"),
)


class Stack:
    """A running realizer and a client."""

    def __init__(self, bus: BusClient, runtime: Any, git: Any) -> None:
        self.bus, self.runtime, self.git = bus, runtime, git

    async def ok(self, subject: str, message: Any, timeout: float = 10.0) -> Any:
        reply = await self.bus.request(subject, message, timeout=timeout)
        assert isinstance(reply, Ok), reply
        return reply.result

    async def error(self, subject: str, message: Any) -> ErrorReply:
        reply = await self.bus.request(subject, message, timeout=10.0)
        assert isinstance(reply, ErrorReply), reply
        return reply


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[Any]:
    """A nats-server of this test alone: the realizer's memory store starts empty, and so must
    its stream (the relay refuses a stream ahead of its store)."""
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
) -> AsyncIterator[Stack]:
    nats_server = own_nats
    env = {
        "CLIPYARD_HOME": str(tmp_path / "home"),
        "CLIPYARD_NATS_URL": nats_server.url,
        "CLIPYARD_STORE": "memory",
    }
    settings = RealizerSettings(
        service=ServiceSettings.from_env("workspace-realizer", env), reaper_interval=3600
    )

    ports = HostPorts(
        git=git, commands=commands, credentials=NoCredentials(), pull_requests=pull_requests
    )
    nc = await nats.connect(nats_server.url)

    async def supervisor(msg: Any) -> None:
        result = StopWorkspaceRuntimeServicesResult(workspace_id="w", stopped=0)
        await msg.respond(msgspec.json.encode(Ok(result=result)))

    await nc.subscribe(subjects.stop_workspace_runtime_services("local"), cb=supervisor)
    async with AsyncExitStack() as exit_stack:
        runtime = await start_service(
            build_spec(settings, ports), settings.service, exit_stack, asyncio.Event()
        )
        # The gateway's company reaches the realizer through its inbox.
        await company_created(nc, runtime, COMPANY)
        yield Stack(BusClient(nc), runtime, git)
    await nc.drain()


async def seed(s: Stack, tmp_path: Path) -> dict[str, Any]:
    project = await s.ok(
        subjects.PROJECT_CREATE,
        CreateProject(
            principal=BOARD, company_id=COMPANY, name="Web", execution_workspace_policy=POLICY
        ),
    )
    (tmp_path / "repo").mkdir(exist_ok=True)
    checkout = await s.ok(
        subjects.create_project_workspace("local"),
        CreateProjectWorkspace(
            principal=BOARD, project_id=project["id"], name="main", cwd=str(tmp_path / "repo")
        ),
    )
    issue = await s.ok(
        subjects.ISSUE_CREATE,
        CreateIssue(
            principal=BOARD,
            company_id=COMPANY,
            title="Add worktree support",
            project_id=project["id"],
            status="todo",
        ),
    )
    return {"project": project, "checkout": checkout, "issue": issue}


async def test_projects_issues_and_a_realized_workspace_end_to_end(
    stack: Stack, tmp_path: Path
) -> None:
    s = stack
    seeded = await seed(s, tmp_path)
    assert seeded["issue"]["identifier"] == "ACME-1"
    assert seeded["checkout"]["managedCheckout"]["state"] == "none"
    # Bad input answers 422 and writes nothing.
    before = s.runtime.app.last_notification_id()
    missing = await s.error(
        subjects.create_project_workspace("local"),
        CreateProjectWorkspace(principal=BOARD, project_id=seeded["project"]["id"], name="none"),
    )
    assert (missing.code, missing.status) == ("workspace_path_required", 422)
    assert s.runtime.app.last_notification_id() == before
    # Realize: created, with the warnings list; the issue now points at it.
    result = await s.ok(
        subjects.realize_workspace("local"),
        RealizeWorkspace(principal=BOARD, issue_id=seeded["issue"]["id"]),
    )
    workspace = result["workspace"]
    assert result["created"]
    assert workspace["status"] == "active"
    assert workspace["branchName"] == "ACME-1-add-worktree-support"
    issue = await s.ok(
        subjects.ISSUE_GET, GetIssue(principal=BOARD, issue_id=seeded["issue"]["id"])
    )
    assert issue["executionWorkspaceId"] == workspace["id"]
    # Another company: 404 for everything.
    for subject, message in ((subjects.WORKSPACE_GET, GetExecutionWorkspace(principal=OTHER, workspace_id=workspace["id"])),
                             (subjects.ISSUE_GET, GetIssue(principal=OTHER, issue_id=seeded["issue"]["id"]))):  # fmt: skip
        assert (await s.error(subject, message)).status == 404
    # Detail has the delivery state; list rows do not run git.
    detail = await s.ok(
        subjects.WORKSPACE_GET, GetExecutionWorkspace(principal=BOARD, workspace_id=workspace["id"])
    )
    assert (detail["deliveryState"], detail["commitsAhead"]) == ("merged_by_ancestry", 0)
    inspections = s.git.names().count("inspect")
    page = await s.ok(
        subjects.WORKSPACE_LIST, ListExecutionWorkspaces(principal=BOARD, company_id=COMPANY)
    )
    assert page["total"] == 1
    assert "deliveryState" not in page["items"][0]
    assert s.git.names().count("inspect") == inspections
    # Archive is blocked while the issue is open (409 close_blocked with the readiness).
    blocked = await s.error(
        subjects.archive_workspace("local"),
        ArchiveWorkspace(principal=BOARD, workspace_id=workspace["id"]),
    )
    assert (blocked.code, blocked.status) == ("close_blocked", 409)
    assert (
        blocked.details["closeReadiness"]["blockingReasons"] == blocked.details["blockingReasons"]
    )
    readiness = await s.ok(
        subjects.WORKSPACE_CLOSE_READINESS,
        GetCloseReadiness(principal=BOARD, workspace_id=workspace["id"]),
    )
    assert readiness["state"] == "blocked"
    assert readiness["linkedIssues"][0]["identifier"] == "ACME-1"
    # Issue done; PATCH status=archived runs the saga through the supervisor's answer.
    await s.ok(
        subjects.ISSUE_UPDATE,
        UpdateIssue(principal=BOARD, issue_id=seeded["issue"]["id"], status="done"),
    )
    archived = await s.ok(
        subjects.update_execution_workspace("local"),
        UpdateExecutionWorkspace(principal=BOARD, workspace_id=workspace["id"], status="archived"),
    )
    assert (archived["status"], archived["lifecycleGeneration"]) == ("archived", 1)
    # The audit trail, the history, the operations and their output.
    events = await s.ok(
        service_query("realizer", "workspace_events"),
        GetWorkspaceEvents(principal=BOARD, workspace_id=workspace["id"]),
    )
    # Public types, and for the one event never published its derived type: no class names.
    assert [(e["type"], e["label"]) for e in events["items"]] == [
        ("workspace.realized.v1", "Workspace realized"),
        ("workspace.provisioned.v1", "Workspace provisioned"),
        ("workspace.archive_started.v1", "Workspace archive started"),
        ("workspace.archived.v1", "Workspace archived"),
    ]
    # The filter of the API: an aggregate, a type without version; a page counts those only.
    archive = await s.ok(
        service_query("realizer", "workspace_events"),
        GetWorkspaceEvents(
            principal=BOARD,
            workspace_id=workspace["id"],
            types=["workspace.provisioned", "workspace.archived.v1"],
            limit=1,
            offset=1,
        ),
    )
    assert (archive["total"], [e["type"] for e in archive["items"]]) == (
        2,
        ["workspace.archived.v1"],
    )
    history = await s.ok(
        subjects.WORKSPACE_HISTORY,
        GetWorkspaceHistory(principal=BOARD, workspace_id=workspace["id"], version=1),
    )
    assert (history["version"], history["workspace"]["status"]) == (1, "active")
    ops = await s.ok(
        service_query("realizer", "workspace_operations"),
        ListWorkspaceOperations(principal=BOARD, workspace_id=workspace["id"]),
    )
    provision = next(o for o in ops["items"] if o["phase"] == "workspace_provision")
    one = await s.ok(
        service_query("realizer", "workspace_operation"),
        GetWorkspaceOperation(principal=BOARD, operation_id=provision["id"]),
    )
    assert one["stdoutExcerpt"] == "ran make setup\n"
    assert "stdoutExcerpt" not in provision
    out = await s.ok(
        service_query("realizer", "workspace_operation_output"),
        GetWorkspaceOperationOutput(
            principal=BOARD, operation_id=provision["id"], offset=4, length=4
        ),
    )
    assert (msgspec.convert(out, dict)["totalBytes"], out["offset"]) == (15, 4)
    refused = await s.error(
        service_query("realizer", "workspace_operation_output"),
        GetWorkspaceOperationOutput(principal=BOARD, operation_id=provision["id"], length=10**7),
    )
    assert refused.status == 422


async def test_long_work_answers_accepted_and_the_operation_has_the_result(
    stack: Stack, tmp_path: Path
) -> None:
    s = stack
    seeded = await seed(s, tmp_path)
    gate = asyncio.Event()
    ensure = s.git.ensure_worktree

    async def slow(**kwargs: Any) -> Any:
        await gate.wait()
        return await ensure(**kwargs)

    s.git.ensure_worktree = slow
    # The work waits for the gate, opened only once the reply came: it outlives any deadline. The
    # server answers 0.5 s (REPLY_MARGIN) before the deadline; 3 s leaves the request's own
    # handling (store writes before the wait starts) room on a loaded machine.
    reply = await s.bus.request(
        subjects.realize_workspace("local"),
        RealizeWorkspace(principal=BOARD, issue_id=seeded["issue"]["id"]),
        timeout=3.0,
    )
    assert isinstance(reply, Accepted)
    gate.set()
    deadline = time.monotonic() + 20
    while True:
        view = await s.ok(
            service_query("realizer", "operation"),
            GetOperation(principal=BOARD, operation_id=reply.operation_id),
        )
        if view["status"] != "running" or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert view["status"] == "succeeded"
    assert view["kind"] == "realize"
    assert view["result"]["created"]
    assert view["result"]["workspace"]["sourceIssueId"] == seeded["issue"]["id"]


async def test_a_repo_only_project_workspace_is_cloned_when_created(
    stack: Stack, tmp_path: Path
) -> None:
    from workspace_realizer.adapters.ports import HostOperationError

    s = stack
    project = await s.ok(
        subjects.PROJECT_CREATE, CreateProject(principal=BOARD, company_id=COMPANY, name="Api")
    )
    create = subjects.create_project_workspace("local")
    cloned = await s.ok(
        create,
        CreateProjectWorkspace(
            principal=BOARD,
            project_id=project["id"],
            name="api",
            repo_url="https://github.com/acme/api.git",
        ),
    )
    checkout = cloned["managedCheckout"]
    assert checkout["state"] == "ready"
    assert checkout["path"].endswith(f"/checkouts/{project['id']}/{cloned['id']}/api")
    assert checkout["operationId"]
    # A failed clone still answers the saved workspace (no retry, no duplicate): it says failed.
    s.git.fail["managed_clone"] = HostOperationError(
        "Failed to prepare managed checkout: not found"
    )
    failed = await s.ok(
        create,
        CreateProjectWorkspace(
            principal=BOARD,
            project_id=project["id"],
            name="gone",
            repo_url="https://github.com/acme/gone.git",
        ),
    )
    assert failed["managedCheckout"]["state"] == "failed"
    assert failed["managedCheckout"]["error"] == "Failed to prepare managed checkout: not found"
    rows = [pw for pw in s.runtime.app.project_workspaces.values() if pw.name == "gone"]
    assert [(pw.checkout_state, pw.checkout_error) for pw in rows] == [
        ("failed", "Failed to prepare managed checkout: not found")
    ]
