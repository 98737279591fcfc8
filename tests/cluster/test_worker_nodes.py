"""Two worker nodes behind the replicated control plane (issue 18): ``local`` (the stack's home)
and ``nodeb`` (``<home>-nodeb``), each a workspace-realizer host part and a runtime-supervisor in
a mount namespace where the other node's home is hidden. A project workspace placed on node B is
cloned, realized, its service started and its log read, a job run and the workspace archived,
every one through gateway A (whose own node is ``local``), with every git and process step on
node B: its files are in B's home, none in A's. Node B's processes killed outright, node A's
touch none of its records; B back, its running service is adopted, not restarted. A second
supervisor claiming ``nodeb`` is refused, naming the holder. Then node B is drained on the same
cluster (:mod:`tests.cluster.drain_story`)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.clusterutil import Cluster, bearer, board_key, new_company, until
from tests.cluster.drain_story import drain_node_b
from tests.e2e.agents import PYTHON
from tests.e2e.gitutil import make_repo
from tests.e2e.hostfacts import alive, find_server_pid
from tests.e2e.runtimeutil import ISOLATED, http_service

pytestmark = pytest.mark.cluster

REALIZER, SUPERVISOR = "workspace-realizer", "runtime-supervisor"
WEB = "service:web"
MARKER = {
    "command": [PYTHON, "-c", "import os; open('agent-ran-here.txt', 'w').write(os.getcwd())"],
    "timeoutSec": 60,
}
"""An agent that writes where it runs into its working folder."""


def _files(root: Path) -> set[str]:
    """Every file below ``root`` (relative), logs and the stack's own state left out, and the
    projects' egress allowlists, which every node keeps for all of them (a workspace of any
    project may come to it)."""
    skip = ("logs/", "nats/", "postgres/", "run/", "admin.key", ".lock", "egress/projects/")
    found = set()
    for path in root.rglob("*"):
        name = str(path.relative_to(root))
        if path.is_file() and not name.startswith(skip):
            found.add(name)
    return found


async def _ok(answer: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert answer.status_code == status, f"{answer.status_code} {answer.text[:2000]}"
    body: dict[str, Any] = answer.json()
    return body


async def test_node_b_serves_through_gateway_a_on_node_b_alone_then_drains_empty(
    cluster: Cluster, tmp_path: Path
) -> None:
    stack = cluster.stack
    home_a, home_b = (node.home for node in stack.nodes)
    a = cluster.gateways[0]
    company = (await new_company(a, "Two Hosts"))["id"]
    board = bearer((await board_key(a, company))["key"])
    source = make_repo(tmp_path / "src")  # beside both homes: either host may clone it
    await _ok(
        await a.put(f"/api/companies/{company}/host-access", json={"allowedRoots": [str(tmp_path)]})
    )
    nodes = await _ok(await a.get("/api/nodes"))
    assert {(n["id"], n["state"]) for n in nodes} == {("local", "ready"), ("nodeb", "ready")}
    before_a = _files(home_a)

    project = await _ok(
        await a.post(
            f"/api/companies/{company}/projects",
            json={"name": "web", "executionWorkspacePolicy": ISOLATED},
            headers=board,
        ),
        201,
    )

    # A cwd with two ready nodes and no nodeId is refused, naming both.
    refused = await a.post(
        f"/api/projects/{project['id']}/workspaces",
        json={"name": "x", "cwd": str(source)},
        headers=board,
    )
    assert refused.status_code == 422, refused.text
    assert "local, nodeb" in refused.text, refused.text
    assert "nodeId" in refused.text, refused.text

    async def placed() -> httpx.Response:
        return await a.post(
            f"/api/projects/{project['id']}/workspaces",
            json={
                "name": "main",
                "repoUrl": str(source),
                "isPrimary": True,
                "nodeId": "nodeb",
                "runtimeConfig": {
                    "services": [http_service("web")],
                    "jobs": [{"name": "mark", "command": "pwd > job-ran-here.txt"}],
                },
            },
            headers=board,
        )

    # The grant reaches node B's host part a moment after the answer (403 until then).
    made = await placed()
    for _ in range(50):
        if made.status_code != 403:
            break
        await asyncio.sleep(0.2)
        made = await placed()
    pw = await _ok(made, 201)
    assert pw["nodeId"] == "nodeb", pw
    assert pw["managedCheckout"]["state"] == "ready", pw
    assert Path(pw["managedCheckout"]["path"]).is_relative_to(home_b), pw

    # Realized through gateway A: on node B, in B's home.
    issue = await _ok(
        await a.post(
            f"/api/companies/{company}/issues",
            json={"title": "Serve it", "projectId": project["id"], "status": "in_progress"},
            headers=board,
        ),
        201,
    )
    realized = await _ok(
        await a.post(f"/api/issues/{issue['id']}/execution-workspace", json={}, headers=board),
        201,
    )
    ws = realized["workspace"]
    assert ws["nodeId"] == "nodeb", ws
    assert Path(ws["cwd"]).is_relative_to(home_b), ws
    detail = await _ok(await a.get(f"/api/execution-workspaces/{ws['id']}", headers=board))
    assert detail["commitsAhead"] == 0, detail  # git ran where the worktree is

    # Its service started through gateway A runs on node B: in B's mount namespace, where A's
    # home is an empty tmpfs.
    started = await _ok(
        await a.post(
            f"/api/execution-workspaces/{ws['id']}/runtime-services/start",
            json={"workspaceCommandId": WEB},
            headers=board,
        )
    )
    assert started["operation"]["status"] == "succeeded", started["operation"]
    (row,) = [r for r in started["workspace"]["runtimeServices"] if r["workspaceCommandId"] == WEB]
    assert row["status"] == "running", row
    assert 43000 <= row["port"] <= 43999, row  # node B's own port range
    server = find_server_pid(row["port"])
    supervisor_b = stack.pid(SUPERVISOR, 2)
    assert _sees(supervisor_b, home_b / "logs")
    assert not _sees(supervisor_b, home_a / "logs")  # A's home: an empty tmpfs on node B
    assert not _sees(server, home_a / "logs")
    assert _sees(stack.pid(SUPERVISOR, 1), home_a / "logs")
    assert not _sees(stack.pid(SUPERVISOR, 1), home_b / "logs")

    # Its log, read through gateway A, comes from node B's file.
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"http://127.0.0.1:{row['port']}/probe-b")).status_code == 404
    logs = f"/api/execution-workspaces/{ws['id']}/runtime-services/{row['id']}/logs"

    async def logged() -> bool:
        answer = await a.get(logs, headers=board, params={"tail": 50})
        assert answer.status_code == 200, answer.text
        return "/probe-b" in answer.text

    await until(logged, 10.0, "the probe in the service's log, read through gateway A")

    # A job run through gateway A runs in the worktree on node B.
    ran = await _ok(
        await a.post(
            f"/api/execution-workspaces/{ws['id']}/runtime-commands/run",
            json={"workspaceCommandId": "job:mark"},
            headers=board,
        )
    )
    assert ran["operation"]["status"] == "succeeded", ran["operation"]
    assert (Path(ws["cwd"]) / "job-ran-here.txt").read_text().strip() == ws["cwd"]

    # An (untrusted) agent's run on the workspace, woken through gateway A, launches on node B:
    # its process starts in the worktree there.
    agent = await _ok(
        await a.post(
            f"/api/companies/{company}/agents",
            json={"name": "marker", "adapterType": "process", "adapterConfig": MARKER},
            headers=board,
        ),
        201,
    )
    woken = await _ok(
        await a.post(
            f"/api/agents/{agent['id']}/wakeup", json={"issueId": issue["id"]}, headers=board
        ),
        202,
    )

    async def run_ended() -> bool:
        run = await _ok(await a.get(f"/api/runs/{woken['runId']}", headers=board))
        return run["status"] in ("succeeded", "failed", "cancelled", "timed_out")

    await until(run_ended, 60.0, "the agent's run to end")
    run = await _ok(await a.get(f"/api/runs/{woken['runId']}", headers=board))
    assert run["status"] == "succeeded", run
    assert (Path(ws["cwd"]) / "agent-ran-here.txt").read_text() == ws["cwd"]

    # Node B's processes killed outright (its host part and supervisor; the service lives on).
    stack.kill(REALIZER, 4, signal.SIGKILL)
    stack.kill(SUPERVISOR, 2, signal.SIGKILL)
    await asyncio.sleep(3.0)  # node A's processes had their chance to touch B's records
    assert alive(server)
    shown = await _ok(await a.get(f"/api/execution-workspaces/{ws['id']}", headers=board))
    (still,) = [r for r in shown["runtimeServices"] if r["id"] == row["id"]]
    assert still["status"] == "running", still  # node A marked nothing of node B's
    assert shown["nodeState"] == "unreachable", shown  # shown as recorded, no git run
    assert shown["deliveryState"] == "unknown", shown
    context = await _ok(await a.get(f"/api/issues/{issue['id']}/heartbeat-context", headers=board))
    assert context["currentExecutionWorkspace"]["nodeState"] == "unreachable", context

    async def listed_unreachable() -> bool:  # once node A's registry has seen it silent
        rows = await _ok(
            await a.get(f"/api/companies/{company}/execution-workspaces", headers=board)
        )
        return [r["nodeState"] for r in rows if r["id"] == ws["id"]] == ["unreachable"]

    await until(listed_unreachable, 20.0, "the list shows node B's workspace unreachable")
    down = await a.post(
        f"/api/execution-workspaces/{ws['id']}/runtime-services/stop",
        json={"workspaceCommandId": WEB},
        headers=board,
    )
    assert down.status_code == 503, down.text
    assert down.json()["code"] == "node_unreachable", down.text
    assert down.json()["details"] == {"nodeId": "nodeb"}, down.text
    assert alive(server)

    # Node B back: its still-running service is adopted, not restarted.
    await stack.start_replica(SUPERVISOR, 2)
    await stack.start_replica(REALIZER, 4)
    back = await _ok(await a.get(f"/api/execution-workspaces/{ws['id']}", headers=board))
    (adopted,) = [r for r in back["runtimeServices"] if r["id"] == row["id"]]
    assert adopted["status"] == "running", adopted
    assert adopted["pid"] == row["pid"], adopted
    assert find_server_pid(row["port"]) == server
    assert back["nodeState"] == "ready", back

    # A second supervisor claiming node B is refused at start, naming the holder.
    twin = dict(stack.replica(SUPERVISOR, 2).env, CLIPYARD_INSTANCE_ID="runtime-supervisor-9")
    refused_start = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", stack.replica(SUPERVISOR, 2).launch.module],
        env=twin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused_start.returncode != 0
    assert "runtime-supervisor-2" in refused_start.stderr + refused_start.stdout

    # Archived through gateway A (its issue done): the stop, the rescue ref of its untracked
    # file and the worktree removal, on node B.
    await _ok(await a.patch(f"/api/issues/{issue['id']}", json={"status": "done"}, headers=board))
    archived = await _ok(
        await a.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"status": "archived"}, headers=board
        )
    )
    assert archived["status"] == "archived", archived
    assert not Path(ws["cwd"]).exists()
    await until(lambda: _gone(server), 10.0, "the service stopped by the archive")

    # Every git and process step was on node B: A's home holds nothing new.
    assert _files(home_a) - before_a == set(), sorted(_files(home_a) - before_a)
    assert any(Path(pw["managedCheckout"]["path"]).iterdir())

    await drain_node_b(cluster, tmp_path)

    # The archived workspace moved with its project workspace and its rescue commit: reopened
    # through gateway A, it is rebuilt on node A with the files the archive kept.
    reopened = await _ok(
        await a.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"status": "active"}, headers=board
        )
    )
    assert reopened["nodeId"] == "local", reopened
    assert Path(reopened["cwd"]).is_relative_to(home_a), reopened
    assert (Path(reopened["cwd"]) / "agent-ran-here.txt").read_text() == ws["cwd"]


def _sees(pid: int, path: Path) -> bool:
    """Whether process ``pid`` sees ``path`` (in its own mount namespace)."""
    return (Path(f"/proc/{pid}/root") / path.relative_to("/")).exists()


async def _gone(pid: int) -> bool:
    return not alive(pid)
