"""The access model on the realizer's endpoints, through a real nats-server (``build_spec`` with
fake host ports, a hand-written heartbeat-controller answering ``ws.qry.agent.get``): an agent key
and a run token get 403 on every query and command about another agent's issue or workspace,
and on reassigning, reparenting or moving their own issue; project and project-workspace reads
carry no ``env``, no host paths and no credentials in ``repoUrl`` for them; an
``assigneeAgentId`` of another company is 404 naming the field, while an agent created a moment
ago (not in the realizer's copy yet) is assignable at once."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest

from contracts import workspace_subjects as subjects
from contracts.agents import GetAgent
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.errors import ErrorCode
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
    ReconcileBranch,
    ReopenWorkspace,
    StopWorkspaceRuntimeServicesResult,
    UpdateExecutionWorkspace,
)
from contracts.heartbeat_subjects import AGENT_GET
from contracts.run_events import AgentCreated
from contracts.subjects import event_subject, service_query
from contracts.workspace_commands import (
    AddWorkProduct,
    CreateIssue,
    CreateProject,
    CreateProjectWorkspace,
    GetIssue,
    GetProject,
    GetProjectWorkspace,
    ListIssues,
    ListProjects,
    ListProjectWorkspaces,
    ListWorkProducts,
    UpdateIssue,
)
from contracts.workspace_config import (
    ExecutionWorkspacePolicy,
    RuntimeConfig,
    ServiceSpec,
    WorkspaceStrategy,
)
from contracts.workspace_diff import GetWorkspaceDiff
from natsbus import BusClient, error_reply
from servicekit import ServiceSettings, start_service
from testkit.nats_server import start_nats_server
from workspace_realizer.adapters.host import HostPorts, NoCredentials
from workspace_realizer.app import build_spec
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.endpoints.issues import COMPANY_WAIT
from workspace_realizer.settings import RealizerSettings
from workspace_realizer.usecases.views import project_workspace_view

pytestmark = pytest.mark.integration

COMPANY = "9d6c2c1e-0000-4000-8000-00000000c0de"
ELSEWHERE = "another-company"
X, Y = "a0000000-0000-4000-8000-00000000000x", "a0000000-0000-4000-8000-00000000000y"
RUN = "5a1e0c52-0000-4000-8000-00000000a001"
BOARD = Principal(company_id=COMPANY, actor=Actor(type="board", id="board-key"))
OTHER_BOARD = Principal(company_id=ELSEWHERE, actor=Actor(type="board", id="other-key"))
KEY_X = Principal(company_id=COMPANY, actor=Actor(type="agent", id=X))
POLICY = ExecutionWorkspacePolicy(
    default_mode="isolated_workspace",
    workspace_strategy=WorkspaceStrategy(type="git_worktree", worktree_parent_dir="/srv/trees"),
)


@pytest.fixture(autouse=True)
def _srv_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator lets every company name folders under /srv (these tests' host paths)."""
    monkeypatch.setenv("CLIPYARD_ALLOWED_ROOTS", "/tmp:/srv")


def run_token(issue_id: str) -> Principal:
    """A run token of agent X: its run is for ``issue_id``."""
    return Principal(company_id=COMPANY, actor=Actor(type="agent", id=X), run_id=RUN,
                     issue_id=issue_id, run_bound=True)  # fmt: skip


@dataclass
class FakeController:
    """``ws.qry.agent.get`` by hand: ``agents[id]`` is the agent's company (absent: 404)."""

    agents: dict[str, str] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    async def answer(self, msg: Any) -> None:
        request = msgspec.json.decode(msg.data, type=GetAgent)
        self.asked.append(request.agent_id)
        company = self.agents.get(request.agent_id)
        reply: Ok | ErrorReply = (
            error_reply(ErrorCode.NOT_FOUND, f"There is no agent {request.agent_id}.")
            if company is None
            else Ok(result={"id": request.agent_id, "companyId": company, "name": "bot"})
        )
        await msg.respond(msgspec.json.encode(reply))


@dataclass
class Stack:
    """A running realizer, a client, the fake controller and the raw connection."""

    bus: BusClient
    runtime: Any
    controller: FakeController
    nc: Any
    subscription: Any

    async def ok(self, subject: str, message: Any) -> Any:
        reply = await self.bus.request(subject, message, timeout=10.0)
        assert isinstance(reply, Ok), reply
        return reply.result

    async def error(self, subject: str, message: Any) -> ErrorReply:
        reply = await self.bus.request(subject, message, timeout=10.0)
        assert isinstance(reply, ErrorReply), reply
        return reply


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
) -> AsyncIterator[Stack]:
    env = {"CLIPYARD_HOME": str(tmp_path / "home"), "CLIPYARD_NATS_URL": own_nats.url,
           "CLIPYARD_STORE": "memory"}  # fmt: skip
    settings = RealizerSettings(
        service=ServiceSettings.from_env("workspace-realizer", env), reaper_interval=3600
    )
    ports = HostPorts(
        git=git, commands=commands, credentials=NoCredentials(), pull_requests=pull_requests
    )
    nc = await nats.connect(own_nats.url)

    async def supervisor(msg: Any) -> None:
        result = StopWorkspaceRuntimeServicesResult(workspace_id="w", stopped=0)
        await msg.respond(msgspec.json.encode(Ok(result=result)))

    await nc.subscribe(subjects.stop_workspace_runtime_services("local"), cb=supervisor)
    controller = FakeController({X: COMPANY, Y: COMPANY})
    subscription = await nc.subscribe(AGENT_GET, cb=controller.answer)
    async with AsyncExitStack() as exit_stack:
        runtime = await start_service(
            build_spec(settings, ports), settings.service, exit_stack, asyncio.Event()
        )
        await company_created(nc, runtime, COMPANY)
        yield Stack(BusClient(nc), runtime, controller, nc, subscription)
    await nc.drain()


async def _project(s: Stack, tmp_path: Path) -> tuple[str, str]:
    project = await s.ok(subjects.PROJECT_CREATE, CreateProject(
        principal=BOARD, company_id=COMPANY, name="Web", execution_workspace_policy=POLICY))  # fmt: skip
    (tmp_path / "repo").mkdir(exist_ok=True)
    config = RuntimeConfig(services=[
        ServiceSpec(name="web", command="npm start", cwd="/srv/acme/web",
                    env={"API_TOKEN": "s3cret-value"}),
        ServiceSpec(name="docs", command="make docs", cwd="docs"),
    ])  # fmt: skip
    checkout = await s.ok(subjects.create_project_workspace("local"), CreateProjectWorkspace(
        principal=BOARD, project_id=project["id"], name="main", cwd=str(tmp_path / "repo"),
        runtime_config=config))  # fmt: skip
    return project["id"], checkout["id"]


async def _issue(s: Stack, project: str, assignee: str | None, title: str = "Fix it") -> str:
    issue = await s.ok(subjects.ISSUE_CREATE, CreateIssue(
        principal=BOARD, company_id=COMPANY, title=title, project_id=project,
        assignee_agent_id=assignee))  # fmt: skip
    return str(issue["id"])


@pytest.mark.parametrize("who", ["agent key", "run token"])
async def test_agent_principals_get_403_on_every_read_and_command_of_another_agents_things(
    stack: Stack, tmp_path: Path, who: str
) -> None:
    s = stack
    project, _ = await _project(s, tmp_path)
    mine, theirs = await _issue(s, project, X, "X's"), await _issue(s, project, Y, "Y's")
    spaces = {}
    for issue in (mine, theirs):
        realized = await s.ok(subjects.realize_workspace("local"),
                              RealizeWorkspace(principal=BOARD, issue_id=issue))  # fmt: skip
        spaces[issue] = realized["workspace"]["id"]
    ops = await s.ok(service_query("realizer", "workspace_operations"),
                     ListWorkspaceOperations(principal=BOARD, workspace_id=spaces[theirs]))  # fmt: skip
    op = ops["items"][0]["id"]
    me = KEY_X if who == "agent key" else run_token(mine)
    ws = spaces[theirs]
    calls = {
        "getIssue": (subjects.ISSUE_GET, GetIssue(principal=me, issue_id=theirs)),
        "updateIssue": (subjects.ISSUE_UPDATE, UpdateIssue(principal=me, issue_id=theirs,
                                                           title="mine now")),
        "listWorkProducts": (subjects.ISSUE_WORK_PRODUCTS,
                             ListWorkProducts(principal=me, issue_id=theirs)),
        "createWorkProduct": (subjects.ISSUE_ADD_WORK_PRODUCT, AddWorkProduct(
            principal=me, issue_id=theirs, product_type="branch", url="x")),
        "realizeIssueWorkspace": (subjects.realize_workspace("local"),
                                  RealizeWorkspace(principal=me, issue_id=theirs)),
        "getExecutionWorkspace": (subjects.WORKSPACE_GET,
                                  GetExecutionWorkspace(principal=me, workspace_id=ws)),
        "getCloseReadiness": (subjects.WORKSPACE_CLOSE_READINESS,
                              GetCloseReadiness(principal=me, workspace_id=ws)),
        "getWorkspaceDiff": (subjects.WORKSPACE_DIFF, GetWorkspaceDiff(principal=me, workspace_id=ws)),
        "getWorkspaceHistory": (subjects.WORKSPACE_HISTORY,
                                GetWorkspaceHistory(principal=me, workspace_id=ws, version=1)),
        "listWorkspaceEvents": (service_query("realizer", "workspace_events"),
                                GetWorkspaceEvents(principal=me, workspace_id=ws)),
        "listWorkspaceOperations": (service_query("realizer", "workspace_operations"),
                                    ListWorkspaceOperations(principal=me, workspace_id=ws)),
        "getWorkspaceOperation": (service_query("realizer", "workspace_operation"),
                                  GetWorkspaceOperation(principal=me, operation_id=op)),
        "getWorkspaceOperationOutput": (
            service_query("realizer", "workspace_operation_output"),
            GetWorkspaceOperationOutput(principal=me, operation_id=op, length=10)),
        "updateExecutionWorkspace": (subjects.update_execution_workspace("local"),
                                     UpdateExecutionWorkspace(principal=me, workspace_id=ws,
                                                              name="x")),
    }  # fmt: skip
    before = s.runtime.app.last_notification_id()
    for route, (subject, message) in calls.items():
        refused = await s.error(subject, message)
        assert (refused.code, refused.status) == ("forbidden", 403), (route, refused)
    assert s.runtime.app.last_notification_id() == before
    # Its own issue and workspace answer; lists hold only them.
    await s.ok(subjects.ISSUE_GET, GetIssue(principal=me, issue_id=mine))
    await s.ok(subjects.WORKSPACE_GET, GetExecutionWorkspace(principal=me, workspace_id=spaces[mine]))  # fmt: skip
    issues = await s.ok(subjects.ISSUE_LIST, ListIssues(principal=me, company_id=COMPANY))
    assert [i["id"] for i in issues["items"]] == [mine]
    rows = await s.ok(subjects.WORKSPACE_LIST,
                      ListExecutionWorkspaces(principal=me, company_id=COMPANY))  # fmt: skip
    assert [w["id"] for w in rows["items"]] == [spaces[mine]]
    # Another company's board: not found, whatever the route.
    for route in ("getIssue", "getExecutionWorkspace", "getWorkspaceOperation", "getWorkspaceDiff"):
        subject, message = calls[route]
        foreign = msgspec.structs.replace(message, principal=OTHER_BOARD)
        assert (await s.error(subject, foreign)).status == 404, route


@pytest.mark.parametrize("who", ["agent key", "run token"])
async def test_an_agent_does_not_reassign_reparent_or_move_its_own_issue(
    stack: Stack, tmp_path: Path, who: str
) -> None:
    s = stack
    project, checkout = await _project(s, tmp_path)
    mine, theirs = await _issue(s, project, X, "X's"), await _issue(s, project, Y, "Y's")
    me = KEY_X if who == "agent key" else run_token(mine)
    issue = await s.ok(subjects.ISSUE_GET, GetIssue(principal=BOARD, issue_id=mine))
    before, asked = s.runtime.app.last_notification_id(), list(s.controller.asked)
    refused = {
        "assigneeAgentId": UpdateIssue(principal=me, issue_id=mine, assignee_agent_id=Y),
        "parentId": UpdateIssue(principal=me, issue_id=mine, parent_id=theirs),
        "projectWorkspaceId": UpdateIssue(principal=me, issue_id=mine,
                                          project_workspace_id=checkout),
        # An agent the controller does not know: refused as well, never looked up.
        "assigneeAgentId ": UpdateIssue(principal=me, issue_id=mine,
                                        assignee_agent_id="a-unknown", status="in_progress"),
    }  # fmt: skip
    for field_name, update in refused.items():
        answer = await s.error(subjects.ISSUE_UPDATE, update)
        assert (answer.code, answer.status) == ("forbidden", 403), (field_name, answer)
        assert answer.details == {"fields": [field_name.strip()]}
        assert "a board key may" in answer.message
    assert s.controller.asked == asked
    assert s.runtime.app.last_notification_id() == before
    assert await s.ok(subjects.ISSUE_GET, GetIssue(principal=BOARD, issue_id=mine)) == issue
    # Status, title and comments are an agent's to change.
    changed = await s.ok(subjects.ISSUE_UPDATE, UpdateIssue(
        principal=me, issue_id=mine, status="in_progress", title="X's, renamed",
        comment="Working on it."))  # fmt: skip
    assert (changed["status"], changed["title"]) == ("in_progress", "X's, renamed")
    assert (changed["assigneeAgentId"], changed["parentId"]) == (X, None)


@pytest.mark.parametrize("who", ["agent key", "run token"])
async def test_an_agent_creates_no_issue_and_changes_no_workspace_refused_before_any_lookup(
    stack: Stack, tmp_path: Path, who: str
) -> None:
    s = stack
    project, _ = await _project(s, tmp_path)
    mine = await _issue(s, project, X, "X's")
    realized = await s.ok(subjects.realize_workspace("local"),
                          RealizeWorkspace(principal=BOARD, issue_id=mine))  # fmt: skip
    ws = realized["workspace"]["id"]
    me = KEY_X if who == "agent key" else run_token(mine)
    before, asked = s.runtime.app.last_notification_id(), list(s.controller.asked)
    # Creating is the board's: refused at once, neither the assignee asked of the controller
    # nor a company the realizer has not seen waited for.
    started = time.monotonic()
    for company in (COMPANY, "c-unseen"):
        refused = await s.error(subjects.ISSUE_CREATE, CreateIssue(
            principal=me, company_id=company, title="mine", project_id=project,
            assignee_agent_id="a-unknown"))  # fmt: skip
        assert (refused.code, refused.status) == ("forbidden", 403), refused
    assert time.monotonic() - started < COMPANY_WAIT
    assert s.controller.asked == asked
    # Its own workspace: read, never changed, archived, reopened or reconciled (no operation
    # is recorded for the attempt).
    node = "local"
    changes = {
        "rename": (subjects.update_execution_workspace(node),
                   UpdateExecutionWorkspace(principal=me, workspace_id=ws, name="x")),
        "archive by update": (subjects.update_execution_workspace(node),
                              UpdateExecutionWorkspace(principal=me, workspace_id=ws,
                                                       status="archived")),
        "archive": (subjects.archive_workspace(node),
                    ArchiveWorkspace(principal=me, workspace_id=ws)),
        "reopen": (subjects.reopen_workspace(node), ReopenWorkspace(principal=me, workspace_id=ws)),
        "reconcile": (subjects.reconcile_branch(node),
                      ReconcileBranch(principal=me, workspace_id=ws, mode="forward")),
    }  # fmt: skip
    for name, (subject, message) in changes.items():
        refused = await s.error(subject, message)
        assert (refused.code, refused.status) == ("forbidden", 403), (name, refused)
        assert "may not write execution workspaces" in refused.message, (name, refused)
    await s.ok(subjects.WORKSPACE_GET, GetExecutionWorkspace(principal=me, workspace_id=ws))
    assert s.runtime.app.last_notification_id() == before


async def test_project_reads_carry_no_env_and_no_host_paths_for_agents(
    stack: Stack, tmp_path: Path
) -> None:
    s = stack
    project, checkout = await _project(s, tmp_path)
    issue = await _issue(s, project, X)
    cloned = await s.ok(subjects.create_project_workspace("local"), CreateProjectWorkspace(
        principal=BOARD, project_id=project, name="api",
        repo_url="https://github.com/acme/api.git"))  # fmt: skip
    assert cloned["managedCheckout"]["path"]
    # Local checkouts whose repoUrl is a host path (a file: URL, an absolute path), and one whose
    # scp-like remote names a user.
    repo_urls = {checkout: None, cloned["id"]: "https://github.com/acme/api.git"}
    for name, url, seen in (
        ("upstream", f"file://{tmp_path}/upstream.git", None),
        ("mirror", "/srv/mirrors/web.git", None),
        ("ssh", "git@github.com:acme/web.git", "github.com:acme/web.git"),
    ):
        local = await s.ok(subjects.create_project_workspace("local"), CreateProjectWorkspace(
            principal=BOARD, project_id=project, name=name, cwd=str(tmp_path / "repo"),
            repo_url=url))  # fmt: skip
        assert local["repoUrl"] == url
        repo_urls[local["id"]] = seen
    reads = [
        (subjects.PROJECT_GET, lambda p: GetProject(principal=p, project_id=project)),
        (subjects.PROJECT_LIST, lambda p: ListProjects(principal=p, company_id=COMPANY)),
        (subjects.PROJECT_WORKSPACE_GET,
         lambda p: GetProjectWorkspace(principal=p, project_id=project, workspace_id=checkout)),
        (subjects.PROJECT_WORKSPACE_GET,
         lambda p: GetProjectWorkspace(principal=p, project_id=project,
                                       workspace_id=cloned["id"])),
        (subjects.PROJECT_WORKSPACE_LIST,
         lambda p: ListProjectWorkspaces(principal=p, project_id=project)),
    ]  # fmt: skip
    host_paths = ("/srv/trees", "/srv/acme/web", "/srv/mirrors", str(tmp_path),
                  cloned["managedCheckout"]["path"], "git@")  # fmt: skip
    for agent in (KEY_X, run_token(issue)):
        for subject, query in reads:
            answer = await s.ok(subject, query(agent))
            wire = msgspec.json.encode(answer).decode()
            assert "s3cret-value" not in wire, subject
            assert "API_TOKEN" not in wire, subject
            assert not any(path in wire for path in host_paths), (subject, wire)
            for row in answer.get("items", [answer]):
                if "executionWorkspacePolicy" in row:
                    strategy = row["executionWorkspacePolicy"]["workspaceStrategy"]
                    assert strategy["worktreeParentDir"] is None
                    assert strategy["type"] == "git_worktree"
                    continue
                assert row["cwd"] is None
                assert row["managedCheckout"]["path"] is None
                assert row["repoUrl"] == repo_urls[row["id"]], row
                for service in (row["runtimeConfig"] or {}).get("services", []):
                    assert service["env"] is None
                    assert service["cwd"] in (None, "docs")
                    assert service["command"] in ("npm start", "make docs")
    # The board reads them whole.
    whole = await s.ok(subjects.PROJECT_WORKSPACE_GET,
                       GetProjectWorkspace(principal=BOARD, project_id=project,
                                           workspace_id=checkout))  # fmt: skip
    assert whole["cwd"] == str(tmp_path / "repo")
    assert whole["runtimeConfig"]["services"][0]["env"] == {"API_TOKEN": "s3cret-value"}
    rows = await s.ok(subjects.PROJECT_WORKSPACE_LIST,
                      ListProjectWorkspaces(principal=BOARD, project_id=project))  # fmt: skip
    assert {row["repoUrl"] for row in rows["items"]} == {
        None, "https://github.com/acme/api.git", f"file://{tmp_path}/upstream.git",
        "/srv/mirrors/web.git", "git@github.com:acme/web.git"}  # fmt: skip
    policy = await s.ok(subjects.PROJECT_GET, GetProject(principal=BOARD, project_id=project))
    assert policy["executionWorkspacePolicy"]["workspaceStrategy"]["worktreeParentDir"] == (
        "/srv/trees"
    )


@pytest.mark.parametrize(("stored", "seen"), [
    ("https://user:ghp_TOKEN@github.com/acme/web.git", "https://github.com/acme/web.git"),
    ("https://ghp_TOKEN@github.com/acme/web.git?private_token=x#f",
     "https://github.com/acme/web.git"),
    ("ssh://git:pw@git.acme.test:2222/acme/web.git", "ssh://git.acme.test:2222/acme/web.git"),
    ("user:pw@git.acme.test:acme/web.git", "git.acme.test:acme/web.git"),
    ("file:///tmp/pytest/repo", None), ("FILE:///srv/repo", None), ("/srv/repo", None),
    ("~/src/repo", None), ("../repo", None),
])  # fmt: skip
def test_a_stored_repo_url_reaches_agents_without_credentials_and_host_paths(
    app: WorkspaceRealizerApplication, world: Any, stored: str, seen: str | None
) -> None:
    board = world.company()
    workspace = copy.copy(app.project_workspaces[world.checkout(board, world.project(board))])
    workspace.repo_url = stored  # stored before credentials were refused, or a local remote
    assert project_workspace_view(workspace, redacted=True).repo_url == seen
    assert project_workspace_view(workspace).repo_url == stored


async def test_an_assignee_must_be_an_agent_of_the_company_and_a_new_one_is_assignable_at_once(
    stack: Stack, tmp_path: Path
) -> None:
    s = stack
    project, _ = await _project(s, tmp_path)
    # An agent of another company reaches the realizer's copy through the controller's stream.
    evil = AgentCreated(
        event_id="7b1e0c52-0000-4000-8000-000000000001", aggregate="agent", aggregate_id="a-evil",
        aggregate_version=1, company_id=ELSEWHERE, occurred_at=datetime.now(UTC),
        actor=Actor(type="board", id="other-key"), name="evil", adapter_type="process",
        trust_level="trusted", max_concurrent_runs=1,
    )  # fmt: skip
    await s.nc.jetstream().publish(event_subject("agent.created.v1", "controller"),
                                   msgspec.json.encode(evil),
                                   headers={"Nats-Msg-Id": "controller:1"})  # fmt: skip
    for _ in range(200):
        if await s.runtime.store(s.runtime.app.agent_copy, "a-evil") is not None:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the agent's event never reached the realizer's copy")
    before = s.runtime.app.last_notification_id()
    issue = CreateIssue(principal=BOARD, company_id=COMPANY, title="t", project_id=project,
                        assignee_agent_id="a-evil")  # fmt: skip
    refused = await s.error(subjects.ISSUE_CREATE, issue)
    assert (refused.code, refused.status) == ("not_found", 404)
    assert refused.details == {"field": "assigneeAgentId", "assigneeAgentId": "a-evil"}
    assert refused.message.startswith("assigneeAgentId a-evil")
    assert s.controller.asked == []  # the copy knew it
    # Created a moment ago, not in the copy yet: the controller says it is ACME's.
    s.controller.agents["a-fresh"] = COMPANY
    made = await s.ok(subjects.ISSUE_CREATE,
                      msgspec.structs.replace(issue, assignee_agent_id="a-fresh"))  # fmt: skip
    assert made["assigneeAgentId"] == "a-fresh"
    assert s.controller.asked == ["a-fresh"]
    # An update names an unknown agent, or another project's id: 404 naming the field.
    ghost = await s.error(subjects.ISSUE_UPDATE, UpdateIssue(
        principal=BOARD, issue_id=made["id"], assignee_agent_id="a-ghost"))  # fmt: skip
    assert (ghost.status, ghost.details["field"]) == (404, "assigneeAgentId")
    other_project = await s.ok(subjects.PROJECT_CREATE,
                               CreateProject(principal=BOARD, company_id=COMPANY, name="Api"))  # fmt: skip
    stray = await s.error(subjects.ISSUE_CREATE, CreateIssue(
        principal=BOARD, company_id=COMPANY, title="t", project_id=other_project["id"],
        parent_id="no-such-issue"))  # fmt: skip
    assert (stray.status, stray.details["field"]) == (404, "parentId")
    # The controller does not answer: 503, retry; never a guessed 404, nothing written.
    await s.subscription.unsubscribe()
    before = s.runtime.app.last_notification_id()
    silent = await s.error(subjects.ISSUE_CREATE,
                           msgspec.structs.replace(issue, assignee_agent_id="a-new"))  # fmt: skip
    assert (silent.code, silent.status) == ("service_unavailable", 503)
    assert "retry" in silent.message
    assert s.runtime.app.last_notification_id() == before
