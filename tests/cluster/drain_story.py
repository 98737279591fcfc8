"""Draining a worker node (issue 18), the end of ``test_worker_nodes``'s story on its cluster (a
cluster's start is most of a test's time): node B holds a repo-only project workspace with three idle
worktrees, one with uncommitted and untracked files, one with a commit never pushed, and one
running service. ``POST /api/nodes/nodeb/drain`` through gateway A moves them all to node A:
the node ends empty and ``draining``, every file is in A's home, the work is where it was (same
branch, same commit, the changes still uncommitted), the service runs again on A, nothing of
them is left in B's home, and a new project workspace is placed on A."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from tests.cluster.clusterutil import Cluster, bearer, board_key, new_company, until
from tests.e2e.agents import PYTHON
from tests.e2e.gitutil import git, make_repo
from tests.e2e.runtimeutil import ISOLATED, http_service

__all__ = ["drain_node_b"]

WEB = "service:web"
SLEEPER = {"command": [PYTHON, "-c", "import time; time.sleep(6)"], "timeoutSec": 60}
"""An agent whose run holds its workspace for a few seconds."""
SAFE = ("-c", "safe.directory=*")
"""A worktree whose service ran is the company's (its uid): git reads it as root only so."""


async def _ok(answer: httpx.Response, status: int = 200) -> Any:
    assert answer.status_code == status, f"{answer.status_code} {answer.text[:2000]}"
    return answer.json()


def _tree(root: Path) -> dict[str, bytes]:
    """Every file of a worktree but git's own, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


async def drain_node_b(cluster: Cluster, tmp_path: Path) -> None:
    """Fill node B, drain it through gateway A, and check it ends empty with every file on A."""
    home_a, home_b = (node.home for node in cluster.stack.nodes)
    a = cluster.gateways[0]
    company = (await new_company(a, "Drained"))["id"]
    board = bearer((await board_key(a, company))["key"])
    source = make_repo(tmp_path / "drained-src")  # the project's remote, outside both homes
    grant = {"allowedRoots": [str(tmp_path)]}
    await _ok(await a.put(f"/api/companies/{company}/host-access", json=grant))
    project = await _ok(
        await a.post(
            f"/api/companies/{company}/projects",
            json={"name": "web", "executionWorkspacePolicy": ISOLATED},
            headers=board,
        ),
        201,
    )
    body = {
        "name": "main",
        "repoUrl": str(source),
        "isPrimary": True,
        "nodeId": "nodeb",
        "runtimeConfig": {"services": [http_service("web")]},
    }
    made = await a.post(f"/api/projects/{project['id']}/workspaces", json=body, headers=board)
    for _ in range(50):  # the grant reaches node B's host part a moment after the answer
        if made.status_code != 403:
            break
        await asyncio.sleep(0.2)
        made = await a.post(f"/api/projects/{project['id']}/workspaces", json=body, headers=board)
    pw = await _ok(made, 201)
    old_checkout = Path(pw["managedCheckout"]["path"])
    assert old_checkout.is_relative_to(home_b), pw

    workspaces = []
    for title in ("Dirty", "Ahead", "Clean"):
        issue = await _ok(
            await a.post(
                f"/api/companies/{company}/issues",
                json={"title": title, "projectId": project["id"], "status": "in_progress"},
                headers=board,
            ),
            201,
        )
        realized = await _ok(
            await a.post(f"/api/issues/{issue['id']}/execution-workspace", json={}, headers=board),
            201,
        )
        assert realized["workspace"]["nodeId"] == "nodeb", realized["workspace"]
        workspaces.append(realized["workspace"])
    dirty, ahead, clean = (Path(ws["cwd"]) for ws in workspaces)
    (dirty / "notes.txt").write_text("not committed anywhere\n")
    (dirty / "README.md").write_text("hello, changed\n")
    (ahead / "feature.py").write_text("print('only here')\n")
    git(ahead, "add", "feature.py")
    git(ahead, "commit", "-q", "-m", "never pushed")
    heads = [git(path, "rev-parse", "HEAD") for path in (dirty, ahead, clean)]
    trees = [_tree(path) for path in (dirty, ahead, clean)]
    started = await _ok(
        await a.post(
            f"/api/execution-workspaces/{workspaces[0]['id']}/runtime-services/start",
            json={"workspaceCommandId": WEB},
            headers=board,
        )
    )
    assert started["operation"]["status"] == "succeeded", started["operation"]

    # A second project workspace on node B whose workspace an agent's run holds.
    busy_pw = await _ok(
        await a.post(
            f"/api/projects/{project['id']}/workspaces",
            json={**body, "name": "busy", "isPrimary": False, "runtimeConfig": None},
            headers=board,
        ),
        201,
    )
    busy_issue = await _ok(
        await a.post(
            f"/api/companies/{company}/issues",
            json={
                "title": "Busy",
                "projectId": project["id"],
                "projectWorkspaceId": busy_pw["id"],
                "status": "in_progress",
            },
            headers=board,
        ),
        201,
    )
    agent = await _ok(
        await a.post(
            f"/api/companies/{company}/agents",
            json={"name": "sleeper", "adapterType": "process", "adapterConfig": SLEEPER},
            headers=board,
        ),
        201,
    )
    woken = await _ok(
        await a.post(
            f"/api/agents/{agent['id']}/wakeup", json={"issueId": busy_issue["id"]}, headers=board
        ),
        202,
    )

    async def running() -> bool:
        run = await _ok(await a.get(f"/api/runs/{woken['runId']}", headers=board))
        return run["status"] == "running" and run.get("executionWorkspaceId") is not None

    await until(running, 30.0, "the agent's run to hold its workspace")
    run = await _ok(await a.get(f"/api/runs/{woken['runId']}", headers=board))
    trail = f"/api/execution-workspaces/{run['executionWorkspaceId']}/events"

    async def leased() -> bool:  # the realizer has heard of the run's lease
        asked = {"limit": 200, "types": "workspace.run_leased"}
        rows = await _ok(await a.get(trail, headers=board, params=asked))
        return any(row["type"] == "workspace.run_leased.v1" for row in rows)

    await until(leased, 30.0, "the realizer to record the run's lease")

    report = await _ok(
        await a.post("/api/nodes/nodeb/drain", json={"reason": "host maintenance"}), 200
    )

    assert report["notMoved"] == [], report
    assert pw["id"] in report["projectWorkspacesMoved"], report
    (waiting,) = report["waiting"]
    assert waiting["projectWorkspaceId"] == busy_pw["id"], report
    assert waiting["runIds"] == [woken["runId"]], report
    assert report["remaining"] == 2, report  # the busy one and its project workspace
    moved = {m["workspaceId"]: m for m in report["moved"]}
    assert set(moved) == {ws["id"] for ws in workspaces}, report
    assert moved[workspaces[0]["id"]]["fileCount"] == 2, report
    assert moved[workspaces[0]["id"]]["servicesRestarted"] == [WEB], str(
        moved[workspaces[0]["id"]]
    )[-900:]
    for ws, head, tree in zip(workspaces, heads, trees, strict=True):
        shown = await _ok(await a.get(f"/api/execution-workspaces/{ws['id']}", headers=board))
        assert shown["nodeId"] == "local", shown
        path = Path(shown["cwd"])
        assert path.is_relative_to(home_a), shown
        assert moved[ws["id"]]["cwd"] == str(path), report
        assert _tree(path) == tree, ws["name"]  # every file, byte for byte
        assert git(path, *SAFE, "rev-parse", "HEAD") == head
        assert git(path, *SAFE, "branch", "--show-current") == ws["branchName"]
        assert not Path(ws["cwd"]).exists(), ws["cwd"]  # gone from node B
    status = git(Path(moved[workspaces[0]["id"]]["cwd"]), *SAFE, "status", "--porcelain")
    assert sorted(line.strip() for line in status.splitlines()) == [
        "?? notes.txt",
        "M README.md",
    ], status  # still uncommitted: a change, and an untracked file
    assert not old_checkout.exists()  # node B's clone went with it
    # The work travelled through the project's remote under refs/clipyard/moves/, deleted once
    # node A had it (uncommitted files do not stay on the remote); no branch was pushed.
    refs = git(source, "for-each-ref", "--format=%(refname)")
    assert refs.splitlines() == ["refs/heads/main"], refs

    # Its service runs again, on node A (A's port range).
    shown = await _ok(
        await a.get(f"/api/execution-workspaces/{workspaces[0]['id']}", headers=board)
    )
    running = [
        r
        for r in shown["runtimeServices"]
        if r["workspaceCommandId"] == WEB and r["status"] == "running"
    ]
    assert len(running) == 1, shown["runtimeServices"]
    assert not 43000 <= running[0]["port"] <= 43999, running

    # The busy one moves once its run ended: node B is draining and empty.
    async def emptied() -> bool:
        nodes = {n["id"]: n for n in await _ok(await a.get("/api/nodes"))}
        assert nodes["nodeb"]["state"] == "draining", nodes
        return bool(nodes["nodeb"]["workspaces"] == 0)

    await until(emptied, 40.0, "node B empty once the run ended")
    held = await _ok(
        await a.get(f"/api/execution-workspaces/{waiting['workspaceId']}", headers=board)
    )
    assert held["nodeId"] == "local", held
    assert Path(held["cwd"]).is_relative_to(home_a), held

    # A new project workspace goes to node A.
    moved_pw = await _ok(
        await a.get(f"/api/projects/{project['id']}/workspaces/{pw['id']}", headers=board)
    )
    assert moved_pw["nodeId"] == "local", moved_pw
    second = {**body, "name": "second", "isPrimary": False}
    second.pop("nodeId")
    placed = await _ok(
        await a.post(f"/api/projects/{project['id']}/workspaces", json=second, headers=board),
        201,
    )
    assert placed["nodeId"] == "local", placed
    assert not any(p.is_file() for p in (home_b / "worktrees").rglob("*"))

    # Taken back, node B is ready for placements again.
    back = await _ok(await a.post("/api/nodes/nodeb/undrain"))
    assert back["state"] == "ready", back
