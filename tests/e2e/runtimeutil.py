"""Runtime services end to end through HTTP: a board key, a project whose issues get execution
workspaces (git worktrees by default) on a real local repository, the supervisor's services and
jobs driven through the API, and long controls (202) followed to their end. The host's side
(``/proc``, ports, leftovers) is in ``tests/e2e/hostfacts.py``.

Shared by ``tests/e2e/test_runtime_*.py``, ``tests/e2e/test_clipyard_up.py`` and
``tests/bench/test_runtime_bench.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from tests.e2e.gitutil import make_repo
from tests.e2e.hostfacts import wait_until

__all__ = [
    "HTTP_SERVER",
    "ISOLATED",
    "SHARED",
    "ApiStack",
    "Board",
    "finished",
    "http_service",
    "rows_of",
    "runtime_board",
    "status_of",
]

HTTP_SERVER = "python3 -m http.server $PORT --bind 127.0.0.1"
"""The issue's service: ``python3 -m http.server`` on the port the supervisor gives it."""


def http_service(name: str, *, command: str = HTTP_SERVER, **extra: Any) -> dict[str, Any]:
    """A service entry with an auto port and http readiness on ``http://127.0.0.1:{{port}}/``."""
    return {
        "name": name,
        "command": command,
        "port": {"type": "auto"},
        "readiness": {"type": "http", "urlTemplate": "http://127.0.0.1:{{port}}/"},
        **extra,
    }


ISOLATED: dict[str, Any] = {
    "enabled": True,
    "defaultMode": "isolated_workspace",
    "allowIssueOverride": True,
    "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"},
}
"""A project policy giving each issue its own git worktree."""

SHARED: dict[str, Any] = {"enabled": True, "defaultMode": "shared_workspace"}
"""A project policy whose issues all work in the project's own checkout."""


class ApiStack(Protocol):
    """What :func:`runtime_board` needs of a running stack (``tests/conftest.py``'s ``Stack``)."""

    @property
    def admin(self) -> httpx.AsyncClient:
        """A client with the admin key."""
        ...

    def client(self, key: str | None = None) -> httpx.AsyncClient:
        """A client of the API, authenticated with ``key``."""
        ...


def rows_of(workspace: Mapping[str, Any], command_id: str) -> list[dict[str, Any]]:
    """The runtime service rows of one configured command in a workspace answer."""
    return [
        dict(row)
        for row in workspace.get("runtimeServices") or []
        if row.get("workspaceCommandId") == command_id
    ]


def status_of(answer: httpx.Response) -> str:
    """``<status> <body>`` of an answer, for assertion messages."""
    return f"{answer.status_code} {answer.text[:2000]}"


@dataclass
class Board:
    """A board key's client on one company, one project (isolated workspaces, git worktrees) and
    its primary project workspace on a real local repository."""

    http: httpx.AsyncClient
    company: dict[str, Any]
    project: dict[str, Any]
    project_workspace: dict[str, Any]
    repo: Path

    async def realize(self, title: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """A new in-progress issue and its realized execution workspace: ``(issue, workspace)``."""
        issue = await self.http.post(
            f"/api/companies/{self.company['id']}/issues",
            json={"title": title, "projectId": self.project["id"], "status": "in_progress"},
        )
        assert issue.status_code == 201, status_of(issue)
        realized = await self.http.post(
            f"/api/issues/{issue.json()['id']}/execution-workspace", json={}
        )
        assert realized.status_code == 201, status_of(realized)
        return issue.json(), dict(realized.json()["workspace"])

    async def set_runtime(self, workspace_id: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """PATCH the execution workspace's own ``config.workspaceRuntime``."""
        answer = await self.http.patch(
            f"/api/execution-workspaces/{workspace_id}",
            json={"config": {"workspaceRuntime": dict(config)}},
        )
        assert answer.status_code == 200, status_of(answer)
        return dict(answer.json())

    async def set_project_runtime(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """PATCH the primary project workspace's ``runtimeConfig`` (inherited by the execution
        workspaces without one of their own)."""
        answer = await self.http.patch(
            f"/api/projects/{self.project['id']}/workspaces/{self.project_workspace['id']}",
            json={"runtimeConfig": dict(config)},
        )
        assert answer.status_code == 200, status_of(answer)
        return dict(answer.json())

    async def control(
        self,
        workspace_id: str,
        action: str,
        *,
        settle: float = 0.0,
        path: str = "runtime-services",
        **body: Any,
    ) -> httpx.Response:
        """POST ``.../{path}/{action}`` with ``body`` (camelCase keys).

        ``settle``: for that many seconds, a 404 or 422 is retried (no runtime test needs it any
        more: the gateway sends what the realizer has just said with each action, and the
        supervisor waits until its copies have had it, so a start right after a realize or a
        PATCH finds the workspace and its new configuration).
        """
        url = f"/api/execution-workspaces/{workspace_id}/{path}/{action}"
        deadline = time.monotonic() + settle
        while True:
            answer = await self.http.post(url, json=body)
            if answer.status_code not in (404, 422) or time.monotonic() >= deadline:
                return answer
            await asyncio.sleep(0.2)

    async def detail(self, workspace_id: str) -> httpx.Response:
        """GET ``/api/execution-workspaces/{id}`` (asserted 200)."""
        answer = await self.http.get(f"/api/execution-workspaces/{workspace_id}")
        assert answer.status_code == 200, status_of(answer)
        return answer

    async def row(self, workspace_id: str, row_id: str) -> dict[str, Any] | None:
        """One runtime service row as the workspace detail shows it, when the supervisor answered
        (no ``X-Clipyard-Warning``)."""
        answer = await self.detail(workspace_id)
        if answer.headers.get("X-Clipyard-Warning"):
            return None
        return next((dict(r) for r in answer.json()["runtimeServices"] if r["id"] == row_id), None)

    async def wait_row(
        self,
        workspace_id: str,
        row_id: str,
        check: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = 20.0,
    ) -> dict[str, Any]:
        """Poll the workspace detail until row ``row_id`` satisfies ``check``; return it."""
        last: list[dict[str, Any] | None] = [None]

        async def probe() -> dict[str, Any] | None:
            row = await self.row(workspace_id, row_id)
            last[0] = row
            return row if row is not None and check(row) else None

        try:
            result: dict[str, Any] = await wait_until(probe, timeout, what, interval=0.2)
        except AssertionError as error:
            raise AssertionError(f"{error}; the row was {last[0]}") from None
        return result

    async def operations(self, workspace_id: str) -> list[dict[str, Any]]:
        """The workspace's operations (realizer's and supervisor's), oldest first."""
        answer = await self.http.get(
            f"/api/execution-workspaces/{workspace_id}/workspace-operations",
            params={"limit": 200},
        )
        assert answer.status_code == 200, status_of(answer)
        assert not answer.headers.get("X-Clipyard-Warning"), answer.headers["X-Clipyard-Warning"]
        return list(answer.json())


@contextlib.asynccontextmanager
async def runtime_board(
    stack: ApiStack,
    tmp_path: Path,
    *,
    runtime_config: Mapping[str, Any] | None = None,
    policy: Mapping[str, Any] = ISOLATED,
    name: str = "Acme",
    timeout: float = 60.0,
    node_id: str | None = None,
) -> AsyncIterator[Board]:
    """A company with a board key, a project with ``policy`` (:data:`ISOLATED`: a git worktree
    per issue; :data:`SHARED`: the project's checkout), and its primary project workspace on a
    new repository under ``tmp_path`` (with ``runtimeConfig``; on worker node ``node_id`` when
    given: a stack of several nodes needs it for a ``cwd``)."""
    repo = make_repo(tmp_path / f"repo-{uuid.uuid4().hex[:8]}")
    async with stack.admin as admin:
        company = (await admin.post("/api/companies", json={"name": name})).json()
        key = (
            await admin.post(
                f"/api/companies/{company['id']}/api-keys", json={"name": "b", "kind": "board"}
            )
        ).json()["key"]
    async with stack.client(key) as http:
        http.timeout = httpx.Timeout(timeout)
        project = await http.post(
            f"/api/companies/{company['id']}/projects",
            json={"name": "Robot", "executionWorkspacePolicy": dict(policy)},
        )
        assert project.status_code == 201, status_of(project)
        body: dict[str, Any] = {"name": "main checkout", "cwd": str(repo), "isPrimary": True}
        if runtime_config is not None:
            body["runtimeConfig"] = dict(runtime_config)
        if node_id is not None:
            body["nodeId"] = node_id
        workspace = await http.post(f"/api/projects/{project.json()['id']}/workspaces", json=body)
        assert workspace.status_code == 201, status_of(workspace)
        yield Board(
            http=http,
            company=company,
            project=project.json(),
            project_workspace=workspace.json(),
            repo=repo,
        )


async def finished(
    board: Board,
    workspace_id: str,
    answer: httpx.Response,
    *,
    timeout: float = 600.0,
    interval: float = 1.0,
) -> dict[str, Any]:
    """A control's answer as a 200 gives it, ``{workspace, operation}``, however it answered.

    A control still running past the gateway's deadline answers 202 ``{operationId, status:
    "running"}``: the operation is polled (``GET /api/operations/{id}``) until it ends, and its
    ``result`` (the supervisor's ``{operation, runtimeServices}``) is completed with the
    workspace as it is read then, as the gateway does for a 200.

    Raises:
        AssertionError: Neither 200 nor 202, the operation failed, or it outran ``timeout``.
    """
    if answer.status_code != 202:
        assert answer.status_code == 200, status_of(answer)
        return dict(answer.json())
    operation_id = answer.json()["operationId"]

    async def done() -> dict[str, Any] | None:
        read = await board.http.get(f"/api/operations/{operation_id}")
        assert read.status_code == 200, status_of(read)
        view: dict[str, Any] = read.json()
        return view if view["status"] != "running" else None

    operation = await wait_until(done, timeout, f"operation {operation_id}", interval=interval)
    assert operation["status"] == "succeeded", operation
    workspace = (await board.detail(workspace_id)).json()
    return {"workspace": workspace, "operation": operation["result"]["operation"]}
