"""The world the access tests (``test_access_matrix.py``, ``test_access_sweep.py``) probe, built
through HTTP on the running stack (ARCHITECTURE §5.1):

* company A: a board key, a board session, a project (isolated git worktrees, a
  ``worktreeParentDir``) whose primary project workspace's ``runtimeConfig`` has an ephemeral
  ``web`` service with an ``env`` value, a secret, a spare board key and a revoked one;
* agents X and Y of A, each with an agent key, an issue assigned to it (``IX``, ``IY``) whose
  execution workspace that agent's key realized (the *operation* it started), and a live run on
  it (``RX``, ``RY``: a sleeping agent, so the run and its token stay valid; the run started the
  ``web`` service, an operation of the run's own) whose token is read from ``/proc``;
* company B: a board key, a project, an agent, an issue with a realized workspace and a run.

Also the route table (``operationId`` -> resource and action, as the gateway's routes declare it
with ``opt=access(...)``), which ``servicekit.access.POLICY`` is read through.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import httpx

from servicekit.access import Action, ActorKind, Reach, Resource, reach_of
from tests.e2e.heartbeatutil import ENDED, create_agent, read_events, token_of_run, wait_run, wake
from tests.e2e.hostfacts import wait_until
from tests.e2e.runtimeutil import HTTP_SERVER, ISOLATED, ApiStack, Board, runtime_board, status_of

__all__ = [
    "PUBLIC_OPERATIONS",
    "ROUTES",
    "SECRET_ENV",
    "AccessStack",
    "Actor",
    "Things",
    "World",
    "expected_reach",
    "open_world",
    "read_stream",
]

SECRET_ENV: Final = "value-123-not-for-agents"
"""The ``env`` value of A's ``web`` service: no agent may read it."""

NO_SERVICE: Final = "0f0e0d0c-0b0a-4090-8070-605040302010"
"""The runtime service id used for B, which has none."""

_R, _W, _C = Action.READ, Action.WRITE, Action.CONTROL

ROUTES: Final[dict[str, tuple[Resource, Action]]] = {
    "createCompany": (Resource.COMPANY, _W),
    "listCompanies": (Resource.COMPANY, _R),
    "getCompany": (Resource.COMPANY, _R),
    "setCompanyHostAccess": (Resource.COMPANY, _W),
    "listApiKeys": (Resource.API_KEY, _R),
    "createApiKey": (Resource.API_KEY, _W),
    "deleteApiKey": (Resource.API_KEY, _W),
    "getOperation": (Resource.OPERATION, _R),
    "streamCompanyEvents": (Resource.EVENT_STREAM, _R),
    "listProjects": (Resource.PROJECT, _R),
    "getProject": (Resource.PROJECT, _R),
    "createProject": (Resource.PROJECT, _W),
    "updateProject": (Resource.PROJECT, _W),
    "deleteProject": (Resource.PROJECT, _W),
    "listProjectWorkspaces": (Resource.PROJECT_WORKSPACE, _R),
    "getProjectWorkspace": (Resource.PROJECT_WORKSPACE, _R),
    "createProjectWorkspace": (Resource.PROJECT_WORKSPACE, _W),
    "updateProjectWorkspace": (Resource.PROJECT_WORKSPACE, _W),
    "deleteProjectWorkspace": (Resource.PROJECT_WORKSPACE, _W),
    "listIssues": (Resource.ISSUE, _R),
    "getIssue": (Resource.ISSUE, _R),
    "listWorkProducts": (Resource.ISSUE, _R),
    "getHeartbeatContext": (Resource.ISSUE, _R),
    "createIssue": (Resource.ISSUE, _W),
    "updateIssue": (Resource.ISSUE, _W),
    "deleteIssue": (Resource.ISSUE, _W),
    "createWorkProduct": (Resource.ISSUE, _W),
    "realizeIssueWorkspace": (Resource.ISSUE, _C),
    "getExecutionWorkspace": (Resource.EXECUTION_WORKSPACE, _R),
    "listExecutionWorkspaces": (Resource.EXECUTION_WORKSPACE, _R),
    "getCloseReadiness": (Resource.EXECUTION_WORKSPACE, _R),
    "getWorkspaceDiff": (Resource.EXECUTION_WORKSPACE, _R),
    "getWorkspaceHistory": (Resource.EXECUTION_WORKSPACE, _R),
    "getWorkspaceOperation": (Resource.EXECUTION_WORKSPACE, _R),
    "getWorkspaceOperationOutput": (Resource.EXECUTION_WORKSPACE, _R),
    "listWorkspaceEvents": (Resource.EXECUTION_WORKSPACE, _R),
    "listWorkspaceOperations": (Resource.EXECUTION_WORKSPACE, _R),
    "updateExecutionWorkspace": (Resource.EXECUTION_WORKSPACE, _W),
    "reconcileBranch": (Resource.EXECUTION_WORKSPACE, _W),
    "controlProjectRuntimeCommands": (Resource.RUNTIME_SERVICE, _C),
    "controlProjectRuntimeServices": (Resource.RUNTIME_SERVICE, _C),
    "controlRuntimeCommands": (Resource.RUNTIME_SERVICE, _C),
    "controlRuntimeServices": (Resource.RUNTIME_SERVICE, _C),
    "getRuntimeServiceLog": (Resource.RUNTIME_SERVICE, _R),
    "listSecrets": (Resource.SECRET, _R),
    "listSecretAccessEvents": (Resource.SECRET, _R),
    "createSecret": (Resource.SECRET, _W),
    "rotateSecret": (Resource.SECRET, _W),
    "deleteSecret": (Resource.SECRET, _W),
    "listAgents": (Resource.AGENT, _R),
    "getAgent": (Resource.AGENT, _R),
    "createAgent": (Resource.AGENT, _W),
    "updateAgent": (Resource.AGENT, _W),
    "deleteAgent": (Resource.AGENT, _W),
    "wakeAgent": (Resource.AGENT, _C),
    "wakeAgentAlias": (Resource.AGENT, _C),
    "getRun": (Resource.RUN, _R),
    "getRunLog": (Resource.RUN, _R),
    "listRuns": (Resource.RUN, _R),
    "cancelRun": (Resource.RUN, _C),
    "getRuntimeHealth": (Resource.ADAPTER_SLOTS, _R),
    "listNodes": (Resource.NODE, _R),
    "drainNode": (Resource.NODE, _C),
    "undrainNode": (Resource.NODE, _C),
}
"""Every authenticated operation of the OpenAPI document and what it acts on (as its route
declares; ``servicekit.access.POLICY`` says who reaches it). A new route goes here too."""

PUBLIC_OPERATIONS: Final = frozenset({"getHealth", "signIn", "signOut"})
"""Operations that need no credential."""


def expected_reach(kind: ActorKind, operation_id: str) -> Reach | None:
    """How far ``kind`` reaches on ``operation_id`` (None: refused, 403)."""
    if operation_id not in ROUTES:
        raise AssertionError(
            f"operation {operation_id!r} is not in tests/e2e/accessworld.py ROUTES: add it with "
            "the resource and action its route declares"
        )
    resource, action = ROUTES[operation_id]
    return reach_of(kind, resource, action)


@dataclass(frozen=True)
class Things:
    """One side's things, by id: company A's with X's (or Y's) issue, workspace, run..., or
    company B's."""

    company: str
    project: str
    project_workspace: str
    issue: str
    workspace: str
    service: str
    """A runtime service of ``workspace`` (B: a made-up id; B has none)."""
    agent: str
    run: str
    operation: str
    """An operation the agent's key started (B: its board's): the realize of ``issue``."""
    run_operation: str
    """An operation the run started (its ``web`` service's start; B: ``operation``)."""
    workspace_operation: str
    """A step of ``workspace`` (``listWorkspaceOperations``)."""
    secret: str
    api_key: str
    """A spare board key of the company (its id)."""

    def ids(self) -> dict[str, str]:
        """The ids that are this side's own (not the company's shared ones)."""
        return {
            "issue": self.issue,
            "workspace": self.workspace,
            "service": self.service,
            "agent": self.agent,
            "run": self.run,
            "operation": self.operation,
            "run_operation": self.run_operation,
            "workspace_operation": self.workspace_operation,
        }


@dataclass(frozen=True)
class Actor:
    """A credential of one actor kind, as a client of the API."""

    name: str
    kind: ActorKind
    http: httpx.AsyncClient
    run_id: str | None = None
    """The run an agent key names in ``X-Run-Id`` where the route takes it (its own run)."""


@dataclass
class World:
    """Everything the access tests need, with one client per credential."""

    x: Things
    y: Things
    b: Things
    actors: list[Actor]
    board_b: httpx.AsyncClient
    anonymous: httpx.AsyncClient
    revoked: httpx.AsyncClient
    host_paths: tuple[str, ...]
    """Host paths no agent may read (A's repository, its worktree parent)."""
    repo: Path

    def actor(self, name: str) -> Actor:
        """The actor called ``name``: ``admin``, ``board key``, ``board session``, ``agent key
        X`` or ``run token RX``."""
        return next(a for a in self.actors if a.name == name)


def _runtime_config() -> dict[str, Any]:
    return {
        "services": [
            {
                "name": "web",
                "command": HTTP_SERVER,
                "port": {"type": "auto"},
                "readiness": {"type": "http", "urlTemplate": "http://127.0.0.1:{{port}}/"},
                "lifecycle": "ephemeral",
                "env": {"SECRET_ISH": SECRET_ENV},
            }
        ]
    }


async def _ok(answer: Any, *statuses: int) -> dict[str, Any]:
    response: httpx.Response = await answer
    assert response.status_code in (statuses or (200, 201)), status_of(response)
    body: dict[str, Any] = response.json() if response.content else {}
    return body


async def _key(board: Board, name: str) -> dict[str, Any]:
    """A new board key of the board's company: ``{id, key, ...}``."""
    url = f"/api/companies/{board.company['id']}/api-keys"
    return await _ok(board.http.post(url, json={"name": name, "kind": "board"}), 201)


async def _agent_key(board: Board, agent_id: str) -> str:
    url = f"/api/companies/{board.company['id']}/api-keys"
    body = {"name": f"agent {agent_id[:8]}", "kind": "agent", "agentId": agent_id}
    return str((await _ok(board.http.post(url, json=body), 201))["key"])


async def _secret(board: Board, name: str) -> str:
    url = f"/api/companies/{board.company['id']}/secrets"
    body = {"name": name, "value": f"{name}-value"}
    return str((await _ok(board.http.post(url, json=body), 201))["id"])


async def _issue(board: Board, title: str, assignee: str) -> str:
    """An issue assigned to ``assignee``, created ``done`` so the assignment wakes nobody yet."""
    body = {
        "title": title,
        "projectId": board.project["id"],
        "status": "done",
        "assigneeAgentId": assignee,
    }
    url = f"/api/companies/{board.company['id']}/issues"
    return str((await _ok(board.http.post(url, json=body), 201))["id"])


async def _operations(board: Board, workspace_id: str) -> list[dict[str, Any]]:
    rows = await board.http.get(
        f"/api/execution-workspaces/{workspace_id}/workspace-operations", params={"limit": 200}
    )
    assert rows.status_code == 200, status_of(rows)
    return list(rows.json())


@dataclass(frozen=True)
class _Side:
    issue: str
    workspace: str
    agent: str
    run: str
    operation: str
    workspace_operation: str


async def _start_work(
    board: Board, agent_id: str, realizer: httpx.AsyncClient, title: str
) -> tuple[str, str]:
    """An issue of ``agent_id``, its workspace realized by ``realizer`` (the agent's key, or the
    board), reopened and the agent woken on it: ``(issue, run)``; returns once the run is
    queued."""
    issue = await _issue(board, title, agent_id)
    await _ok(realizer.post(f"/api/issues/{issue}/execution-workspace", json={}), 201)
    await _ok(board.http.patch(f"/api/issues/{issue}", json={"status": "in_progress"}), 200)
    run = (await wake(board.http, agent_id, issueId=issue, reason="access world"))["runId"]
    return issue, str(run)


async def _realized(board: Board, issue: str, run: str) -> _Side:
    """The run's workspace and the operation that realized it (the first step's)."""
    detail = await _ok(board.http.get(f"/api/issues/{issue}"), 200)
    workspace = detail.get("executionWorkspaceId")
    assert workspace, detail
    steps = await _operations(board, workspace)
    first = next((s for s in steps if s.get("operationId")), None)
    assert first is not None, f"no step of workspace {workspace} names its operation: {steps}"
    agent = str(detail["assigneeAgentId"])
    return _Side(issue, workspace, agent, run, str(first["operationId"]), str(first["id"]))


async def _web_service(board: Board, side: _Side) -> str:
    """Once the run's adapter is up: the id of its ``web`` service (running)."""
    last: list[Any] = []

    async def up() -> str | None:
        run = await _ok(board.http.get(f"/api/runs/{side.run}"), 200)
        assert run["status"] not in ENDED, run
        ws = await _ok(board.http.get(f"/api/execution-workspaces/{side.workspace}"), 200)
        rows = ws.get("runtimeServices") or []
        last[:] = [run, rows]
        web = [r for r in rows if r.get("serviceName") == "web" and r["status"] == "running"]
        return str(web[0]["id"]) if web else None

    try:
        found: str = await wait_until(up, 30, f"run {side.run}'s web service", interval=0.2)
    except AssertionError as error:
        raise AssertionError(f"{error}; the run and its services were {last}") from None
    return found


async def _run_operations(board: Board, runs: list[str]) -> list[str]:
    """For each run, the operation it started to bring up its services (its
    ``ensure_run_services``, read from the company's events)."""

    def started(events: list[dict[str, Any]]) -> dict[str, str]:
        return {
            e["runId"]: e["aggregateId"]
            for e in events
            if e.get("kind") == "ensure_run_services" and e.get("runId") in runs
        }

    events = await read_events(
        board.http,
        board.company["id"],
        lambda es: len(started(es)) == len(runs),
        types=("operation.started.v1",),
    )
    found = started(events)
    return [found[run] for run in runs]


async def _still_running(board: Board, runs: list[str]) -> None:
    """Fail with each run's status and error unless X's and Y's runs still run (their tokens work
    only while they do; another stack on the host killing the slot users ends them)."""
    ended = []
    for run_id in runs:
        run = await _ok(board.http.get(f"/api/runs/{run_id}"), 200)
        if run["status"] in ENDED:
            ended.append({k: run.get(k) for k in ("id", "status", "error", "errorCode")})
    assert not ended, f"the world's runs ended before the probes: {ended}"


async def _cancel_all(board: Board) -> None:
    """Cancel every run of the board's company still queued or running; wait for their end."""
    runs = await board.http.get(f"/api/companies/{board.company['id']}/runs", params={"limit": 200})
    if runs.status_code != 200:
        return
    live = [r["id"] for r in runs.json() if r["status"] not in ENDED]
    for run_id in live:
        await board.http.post(f"/api/runs/{run_id}/cancel")
    for run_id in live:
        with contextlib.suppress(AssertionError):
            await wait_run(board.http, run_id, timeout=30)


class AccessStack(ApiStack, Protocol):
    """What :func:`open_world` needs of a running stack (``tests/conftest.py``'s ``Stack``)."""

    @property
    def admin_key(self) -> str:
        """The admin key."""
        ...


@contextlib.asynccontextmanager
async def open_world(stack: AccessStack, tmp_path: Path) -> AsyncIterator[World]:
    """Build the world (5 to 10 s), yield it, then cancel every run left and close clients."""
    parent = tmp_path / "worktrees"
    parent.mkdir()
    policy = {**ISOLATED, "workspaceStrategy": {**ISOLATED["workspaceStrategy"]}}
    policy["workspaceStrategy"]["worktreeParentDir"] = str(parent)
    async with (
        runtime_board(
            stack, tmp_path, runtime_config=_runtime_config(), policy=policy, name="Acme"
        ) as a,
        runtime_board(stack, tmp_path, name="Bravo") as b,
        contextlib.AsyncExitStack() as clients,
    ):
        try:
            world = await _build(stack, a, b, clients, parent)
            await _still_running(a, [world.x.run, world.y.run])
            yield world
        finally:
            await _cancel_all(a)
            await _cancel_all(b)


@dataclass(frozen=True)
class _Work:
    """The agents' side of the world: X's, Y's and B's issue, workspace, run and operations,
    X's agent key and run token."""

    sides: list[_Side]
    services: list[str]
    run_operations: list[str]
    agent_key: str
    token: str


async def _agents_at_work(a: Board, b: Board) -> _Work:
    """Agents X and Y of A (sleeping ten minutes once started), B's agent (done at once), each
    woken on its issue after its key (B: its board) realized the issue's workspace."""
    agents = [
        await create_agent(a, "sleeper", name=n, timeout_sec=900, AGENT_SLEEP="600")
        for n in ("X", "Y")
    ]
    agent_b = await create_agent(b, "sleeper", name="Bx", AGENT_SLEEP="0")
    keys = [await _agent_key(a, agent["id"]) for agent in agents]
    async with contextlib.AsyncExitStack() as own:
        realizers = [await own.enter_async_context(_client(a.http, key)) for key in keys]
        started = await asyncio.gather(
            *(
                _start_work(a, agent["id"], http, f"{agent['name']}'s work")
                for agent, http in zip(agents, realizers, strict=True)
            ),
            _start_work(b, agent_b["id"], b.http, "B's work"),
        )
    sides = [await _realized(board, *pair) for board, pair in zip((a, a, b), started, strict=True)]
    tokens = await asyncio.gather(*(token_of_run(side.run) for side in sides[:2]))
    services = await asyncio.gather(*(_web_service(a, side) for side in sides[:2]))
    run_operations = await _run_operations(a, [side.run for side in sides[:2]])
    return _Work(
        sides, [*services, NO_SERVICE], [*run_operations, sides[2].operation], keys[0], tokens[0]
    )


async def _build(
    stack: AccessStack, a: Board, b: Board, clients: contextlib.AsyncExitStack, parent: Path
) -> World:
    work = await _agents_at_work(a, b)
    secrets = [await _secret(a, "DEPLOY_TOKEN"), await _secret(b, "DEPLOY_TOKEN")]
    spares = [(await _key(a, "spare"))["id"], (await _key(b, "spare"))["id"]]
    revoked = await _key(a, "revoked")
    await _ok(a.http.delete(f"/api/api-keys/{revoked['id']}"), 204)

    async def client(key: str | None) -> httpx.AsyncClient:
        return await clients.enter_async_context(_client(a.http, key))

    session = await client(None)
    signed = await _ok(session.post("/api/session", json={"key": _bearer(a)}), 200)
    session.headers["X-CSRF-Token"] = signed["csrfToken"]
    x, y, b_things = (
        Things(
            company=board.company["id"],
            project=board.project["id"],
            project_workspace=board.project_workspace["id"],
            issue=side.issue,
            workspace=side.workspace,
            service=work.services[n],
            agent=side.agent,
            run=side.run,
            operation=side.operation,
            run_operation=work.run_operations[n],
            workspace_operation=side.workspace_operation,
            secret=secrets[n // 2],
            api_key=str(spares[n // 2]),
        )
        for n, (board, side) in enumerate(zip((a, a, b), work.sides, strict=True))
    )
    actors = [
        Actor("admin", ActorKind.ADMIN, await client(stack.admin_key)),
        Actor("board key", ActorKind.BOARD_KEY, a.http),
        Actor("board session", ActorKind.BOARD_SESSION, session),
        Actor("agent key X", ActorKind.AGENT_KEY, await client(work.agent_key), run_id=x.run),
        Actor("run token RX", ActorKind.RUN_TOKEN, await client(work.token)),
    ]
    return World(
        x=x,
        y=y,
        b=b_things,
        actors=actors,
        board_b=b.http,
        anonymous=await client(None),
        revoked=await client(str(revoked["key"])),
        host_paths=(str(a.repo), str(parent)),
        repo=a.repo,
    )


def _bearer(board: Board) -> str:
    return str(board.http.headers["Authorization"]).removeprefix("Bearer ")


@contextlib.asynccontextmanager
async def _client(like: httpx.AsyncClient, key: str | None) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the same API as ``like``, with ``key`` (none: no credential)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(
        base_url=like.base_url, headers=headers, timeout=httpx.Timeout(60)
    ) as http:
        yield http


async def read_stream(
    http: httpx.AsyncClient, company_id: str, seconds: float = 1.0
) -> tuple[int, list[dict[str, Any]]]:
    """Open the company's event stream from its start (``Last-Event-ID: 0``): its status and,
    when it answered 200, the events read within ``seconds``."""
    events: list[dict[str, Any]] = []
    status = 0

    async def follow() -> None:
        nonlocal status
        async with http.stream(
            "GET",
            f"/api/companies/{company_id}/events/stream",
            headers={"Last-Event-ID": "0", "Accept": "text/event-stream"},
        ) as answer:
            status = answer.status_code
            if status != 200:
                await answer.aread()
                return
            data: list[str] = []
            async for line in answer.aiter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].strip())
                elif line == "" and data:
                    events.append(json.loads("\n".join(data)))
                    data = []

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(follow(), seconds)
    return status, events
