"""Runtime services end to end: a board, a project and git-worktree execution workspaces on a real
repository, the supervisor's services driven through HTTP, and the host's own facts (``/proc``,
sockets, HTTP to the services) checked beside what the API says.

Shared by ``tests/e2e/test_runtime_*.py`` and ``tests/bench/test_runtime_bench.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.gitutil import make_repo

__all__ = [
    "HTTP_SERVER",
    "Board",
    "alive",
    "find_server_pid",
    "free_port",
    "http_service",
    "port_free",
    "reap",
    "rows_of",
    "runtime_board",
    "start_time",
    "status_of",
    "wait_gone",
    "wait_until",
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


# ---------------------------------------------------------------------------------------------
# The host's facts


def free_port() -> int:
    """A port free on 127.0.0.1 right now (the kernel's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:``port`` now (SO_REUSEADDR, as servers set it,
    so a TIME_WAIT left by our own probes does not count as held)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(1)
        except OSError:
            return False
        return True


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The name (field 2) may hold spaces and parentheses: split after its last ')'.
    return text[text.rindex(")") + 2 :].split()


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is no zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def find_server_pid(port: int) -> int:
    """The ``python3 -m http.server <port>`` process: found by its command line and its port.

    Raises:
        AssertionError: None, or more than one, is running.
    """
    found = []
    for pid in _pids():
        args = _cmdline(pid)
        if "http.server" in args and str(port) in args and alive(pid):
            exe = os.path.basename(os.path.realpath(f"/proc/{pid}/exe")) if args else ""
            if exe.startswith("python"):
                found.append(pid)
    assert len(found) == 1, f"expected one http.server on port {port}, found pids {found}"
    return found[0]


async def wait_gone(pid: int, timeout: float = 15.0) -> None:
    """Wait until process ``pid`` has ended (gone or a zombie)."""
    await wait_until(lambda: not alive(pid), timeout, f"process {pid} to end")


async def wait_until(
    check: Callable[[], Any | Awaitable[Any]], timeout: float, what: str, interval: float = 0.1
) -> Any:
    """Poll ``check`` (plain or async) until it returns something truthy, and return that.

    Raises:
        AssertionError: ``timeout`` seconds passed (the message says what was awaited).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        await asyncio.sleep(interval)


def reap(home: Path) -> list[int]:
    """SIGKILL every runtime-service process group a test's stack left running.

    Services outlive the supervisor by design (DECISIONS 7), so a test that fails midway would
    leave them behind. Each runs under a wrapper whose command line names its run directory under
    ``home``; the wrapper leads the service's session and process group. Returns the groups killed.
    """
    marker = str(home)
    killed = []
    for pid in _pids():
        if pid == os.getpid() or not any(arg.startswith(marker) for arg in _cmdline(pid)[1:]):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
                killed.append(pid)
    return killed


# ---------------------------------------------------------------------------------------------
# The API


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

        ``settle``: for that many seconds, a 404 or 422 is retried. The supervisor learns a
        workspace and its runtime config from the realizer's events, a moment after the realize
        or PATCH answered; a first start right after one may arrive before them.
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
    stack: Any,
    tmp_path: Path,
    *,
    runtime_config: Mapping[str, Any] | None = None,
    name: str = "Acme",
    timeout: float = 60.0,
) -> AsyncIterator[Board]:
    """A company with a board key, a project whose issues get git-worktree workspaces, and its
    primary project workspace on a new repository under ``tmp_path`` (with ``runtimeConfig``)."""
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
            json={
                "name": "Robot",
                "executionWorkspacePolicy": {
                    "enabled": True,
                    "defaultMode": "isolated_workspace",
                    "allowIssueOverride": True,
                    "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"},
                },
            },
        )
        assert project.status_code == 201, status_of(project)
        body: dict[str, Any] = {"name": "main checkout", "cwd": str(repo), "isPrimary": True}
        if runtime_config is not None:
            body["runtimeConfig"] = dict(runtime_config)
        workspace = await http.post(f"/api/projects/{project.json()['id']}/workspaces", json=body)
        assert workspace.status_code == 201, status_of(workspace)
        yield Board(
            http=http,
            company=company,
            project=project.json(),
            project_workspace=workspace.json(),
            repo=repo,
        )
