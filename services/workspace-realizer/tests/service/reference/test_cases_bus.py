"""Reference case 35 through the realizer's list endpoints (``summary`` + ``reuseEligible`` and the
other filters), and the audit history (``version`` and ``at``), over a real nats-server with the
host's real git and shell adapters on real repositories."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest

from contracts import workspace_subjects as subjects
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import (
    GetWorkspaceEvents,
    GetWorkspaceHistory,
    ListExecutionWorkspaces,
    ListExecutionWorkspaceSummaries,
    RealizeWorkspace,
    StopWorkspaceRuntimeServicesResult,
    UpdateExecutionWorkspace,
    WorkspaceFilters,
)
from contracts.execution_views import ExecutionWorkspaceSummary
from contracts.subjects import service_query
from contracts.workspace_commands import (
    CreateIssue,
    CreateProject,
    CreateProjectWorkspace,
    UpdateIssue,
)
from contracts.workspace_config import ExecutionWorkspacePolicy, WorkspaceStrategy
from natsbus import BusClient
from servicekit import ServiceSettings, start_service
from testkit.nats_server import start_nats_server
from workspace_realizer.adapters.commands import ShellCommandRunner
from workspace_realizer.adapters.host import HostPorts, NoCredentials, UnknownPullRequests
from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.app import build_spec
from workspace_realizer.settings import RealizerSettings

pytestmark = pytest.mark.integration

COMPANY = "9d6c2c1e-0000-4000-8000-0000000035ca"
BOARD = Principal(company_id=COMPANY, actor=Actor(type="board", id="board-key"))
POLICY = ExecutionWorkspacePolicy(
    default_mode="isolated_workspace",
    allow_issue_override=True,
    workspace_strategy=WorkspaceStrategy(type="git_worktree", base_ref="main"),
)
SUMMARY_FIELDS = set(msgspec.json.decode(msgspec.json.encode(ExecutionWorkspaceSummary(
    id="x", name="x", mode="isolated_workspace", status="idle", cwd=None, branch_name=None,
    project_workspace_id=None, last_used_at=datetime.now(UTC)))))  # fmt: skip


class Bus:
    def __init__(self, client: BusClient) -> None:
        self.client = client

    async def ok(self, subject: str, message: Any) -> Any:
        reply = await self.client.request(subject, message, timeout=30.0)
        assert isinstance(reply, Ok), reply
        return reply.result

    async def error(self, subject: str, message: Any) -> ErrorReply:
        reply = await self.client.request(subject, message, timeout=30.0)
        assert isinstance(reply, ErrorReply), reply
        return reply


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[Any]:
    server = start_nats_server(store_dir=tmp_path / "nats")
    yield server
    server.stop()


@pytest.fixture
async def bus(own_nats: Any, tmp_path: Path, company_created: Any) -> AsyncIterator[Bus]:
    home = tmp_path / "clipyard-home"
    env = {"CLIPYARD_HOME": str(home), "CLIPYARD_NATS_URL": own_nats.url,
           "CLIPYARD_STORE": "memory"}  # fmt: skip
    settings = RealizerSettings(
        service=ServiceSettings.from_env("workspace-realizer", env), reaper_interval=3600
    )
    ports = HostPorts(git=HostGit(home=settings.service.home), commands=ShellCommandRunner(),
                      credentials=NoCredentials(), pull_requests=UnknownPullRequests())  # fmt: skip
    nc = await nats.connect(own_nats.url)

    async def supervisor(msg: Any) -> None:
        result = StopWorkspaceRuntimeServicesResult(workspace_id="w", stopped=0)
        await msg.respond(msgspec.json.encode(Ok(result=result)))

    await nc.subscribe(subjects.stop_workspace_runtime_services("local"), cb=supervisor)
    async with AsyncExitStack() as stack:
        runtime = await start_service(
            build_spec(settings, ports), settings.service, stack, asyncio.Event()
        )
        await company_created(nc, runtime, COMPANY, seq=35)
        yield Bus(BusClient(nc))
    await nc.drain()


async def project(bus: Bus, scene: Any, *repos: str) -> tuple[str, list[str]]:
    created = await bus.ok(
        subjects.PROJECT_CREATE,
        CreateProject(principal=BOARD, company_id=COMPANY, name="Web",
                      execution_workspace_policy=POLICY),
    )  # fmt: skip
    checkouts: list[str] = []
    for name in repos:
        pw = await bus.ok(
            subjects.create_project_workspace("local"),
            CreateProjectWorkspace(principal=BOARD, project_id=created["id"], name=name,
                                   cwd=str(scene.repo(name)), is_primary=not checkouts),
        )  # fmt: skip
        checkouts.append(pw["id"])
    return created["id"], checkouts


async def realized(bus: Bus, project_id: str, title: str, **fields: Any) -> tuple[str, str]:
    mode = fields.pop("mode", None)
    issue = await bus.ok(
        subjects.ISSUE_CREATE,
        CreateIssue(principal=BOARD, company_id=COMPANY, title=title, project_id=project_id,
                    status="in_progress", **fields),
    )  # fmt: skip
    result = await bus.ok(
        subjects.realize_workspace("local"),
        RealizeWorkspace(principal=BOARD, issue_id=issue["id"], mode=mode),
    )
    assert Path(result["workspace"]["cwd"]).is_dir()
    return issue["id"], result["workspace"]["id"]


async def test_case35_summary_rows_with_reuse_eligible_and_the_filters(
    bus: Bus, scene: Any
) -> None:
    web, (pw1, pw2) = await project(bus, scene, "web", "web-api")
    other, _ = await project(bus, scene, "other")
    i1, ws1 = await realized(bus, web, "First")
    _, ws2 = await realized(bus, web, "On the API checkout", project_workspace_id=pw2)
    _, shared = await realized(bus, web, "Shared", mode="shared_workspace")
    i4, archived = await realized(bus, web, "Finished")
    await bus.ok(subjects.ISSUE_UPDATE, UpdateIssue(principal=BOARD, issue_id=i4, status="done"))
    await bus.ok(
        subjects.update_execution_workspace("local"),
        UpdateExecutionWorkspace(principal=BOARD, workspace_id=archived, status="archived"),
    )
    _, elsewhere = await realized(bus, other, "Elsewhere")

    async def summaries(**filters: Any) -> list[dict[str, Any]]:
        page = await bus.ok(
            subjects.WORKSPACE_LIST_SUMMARIES,
            ListExecutionWorkspaceSummaries(
                principal=BOARD, company_id=COMPANY, filters=WorkspaceFilters(**filters)
            ),
        )
        assert page["total"] == len(page["items"])
        return list(page["items"])

    # summary + reuseEligible: open, not closing, not shared; newest use first; short rows.
    rows = await summaries(project_id=web, reuse_eligible=True)
    assert [r["id"] for r in rows] == [ws2, ws1]
    assert all(set(r) == SUMMARY_FIELDS for r in rows)
    assert rows[0]["projectWorkspaceId"] == pw2
    assert [r["id"] for r in await summaries(reuse_eligible=True)] == [elsewhere, ws2, ws1]
    assert [r["id"] for r in await summaries(project_workspace_id=pw2, reuse_eligible=True)] == [
        ws2
    ]
    assert [r["id"] for r in await summaries(project_workspace_id=pw1, reuse_eligible=True)] == [
        ws1
    ]
    assert [r["id"] for r in await summaries(issue_id=i1, reuse_eligible=True)] == [ws1]
    # No status filter and no reuseEligible: every workspace of the project, archived included.
    assert {r["id"] for r in await summaries(project_id=web)} == {ws1, ws2, shared, archived}
    statuses = {r["id"]: r["status"] for r in await summaries(project_id=web)}
    assert statuses[archived] == "archived"
    # The full listing gives the same selection with full rows (still no delivery state).
    full = await bus.ok(
        subjects.WORKSPACE_LIST,
        ListExecutionWorkspaces(principal=BOARD, company_id=COMPANY,
                                filters=WorkspaceFilters(project_id=web, reuse_eligible=True)),
    )  # fmt: skip
    assert [r["id"] for r in full["items"]] == [ws2, ws1]
    assert set(full["items"][0]) > SUMMARY_FIELDS
    assert "deliveryState" not in full["items"][0]


async def test_history_by_version_and_by_time(bus: Bus, scene: Any) -> None:
    web, _ = await project(bus, scene, "web")
    before = datetime.now(UTC) - timedelta(seconds=1)
    issue, workspace = await realized(bus, web, "History")
    await asyncio.sleep(0.05)
    between = datetime.now(UTC)
    await asyncio.sleep(0.05)
    await bus.ok(subjects.ISSUE_UPDATE, UpdateIssue(principal=BOARD, issue_id=issue, status="done"))
    await bus.ok(
        subjects.update_execution_workspace("local"),
        UpdateExecutionWorkspace(principal=BOARD, workspace_id=workspace, status="archived"),
    )
    events = await bus.ok(
        service_query("realizer", "workspace_events"),
        GetWorkspaceEvents(principal=BOARD, workspace_id=workspace),
    )
    versions = {e["type"]: e["aggregateVersion"] for e in events["items"]}
    latest = events["total"]
    assert versions["workspace.archived.v1"] == latest

    async def history(**when: Any) -> dict[str, Any]:
        return dict(
            await bus.ok(
                subjects.WORKSPACE_HISTORY,
                GetWorkspaceHistory(principal=BOARD, workspace_id=workspace, **when),
            )
        )

    first = await history(version=1)
    assert (first["version"], first["workspace"]["status"]) == (1, "active")
    assert first["workspace"]["id"] == workspace
    then = await history(at=between)
    assert then["workspace"]["status"] == "active"
    assert then["version"] < versions["workspace.archive_started.v1"]
    assert datetime.fromisoformat(then["occurredAt"]) <= between
    now = await history(at=datetime.now(UTC))
    assert (now["version"], now["workspace"]["status"]) == (latest, "archived")
    assert (await history(version=latest))["workspace"]["status"] == "archived"
    # Before the workspace existed: not found. Both or neither of version and at: refused.
    early = await bus.error(
        subjects.WORKSPACE_HISTORY,
        GetWorkspaceHistory(principal=BOARD, workspace_id=workspace, at=before),
    )
    assert (early.code, early.status) == ("not_found", 404)
    for both in ({"version": 1, "at": between}, {}):
        refused = await bus.error(
            subjects.WORKSPACE_HISTORY,
            GetWorkspaceHistory(principal=BOARD, workspace_id=workspace, **both),
        )
        assert refused.status == 422
    # Another company's workspace: 404, with no history given away.
    stranger = Principal(company_id="another-company", actor=Actor(type="board", id="k"))
    hidden = await bus.error(
        subjects.WORKSPACE_HISTORY,
        GetWorkspaceHistory(principal=stranger, workspace_id=workspace, version=1),
    )
    assert hidden.status == 404
