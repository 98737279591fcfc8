"""Archiving a workspace stops its runtime services before its directory is removed, through HTTP
against the running stack.

Two services run in the worktree: the issue's ``python3 -m http.server`` and a witness that, when
it is sent SIGTERM, writes down whether the worktree still exists. After the archive the server's
process is gone and its port released, the witness saw its directory, and the workspace's
operations show the supervisor's stop finished before the realizer's ``git worktree remove``.

Two shared workspaces (issues of a project working in its own checkout) share one directory:
archiving one stops its own services only; the other's keeps running and answering.
"""

from __future__ import annotations

import shlex
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.hostfacts import (
    alive,
    find_server_pid,
    port_free,
    start_time,
    wait_gone,
)
from tests.e2e.runtimeutil import (
    SHARED,
    http_service,
    rows_of,
    runtime_board,
    status_of,
)

pytestmark = pytest.mark.e2e


def _witness(worktree: Path) -> dict[str, Any]:
    # It writes what it saw to its own output (a contained service sees nothing outside its
    # worktree to write to).
    where = shlex.quote(str(worktree))
    command = (
        f"trap 'if [ -d {where} ]; then echo seen-present; else echo seen-gone; fi; exit 0' "
        "TERM; echo watching; while :; do sleep 0.2; done"
    )
    return {
        "name": "witness",
        "command": command,
        "readiness": {"type": "log", "pattern": "watching"},
    }


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_archive_stops_services_before_removing_the_worktree(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    async with runtime_board(stack, tmp_path) as board:
        issue, ws = await board.realize("Archive while serving")
        worktree = Path(ws["cwd"])
        config = {"services": [http_service("web"), _witness(worktree)]}
        await board.set_runtime(ws["id"], config)
        started = await board.control(ws["id"], "start")
        assert started.status_code == 200, status_of(started)
        workspace = started.json()["workspace"]
        (web,) = rows_of(workspace, "service:web")
        (witness,) = rows_of(workspace, "service:witness")
        assert web["status"] == witness["status"] == "running", (web, witness)
        assert web["cwd"] == witness["cwd"] == str(worktree)
        server = find_server_pid(web["port"])
        # The issue is done; archive.
        done = await board.http.patch(f"/api/issues/{issue['id']}", json={"status": "done"})
        assert done.status_code == 200, status_of(done)
        archived = await board.http.patch(
            f"/api/execution-workspaces/{ws['id']}", json={"status": "archived"}
        )
        assert archived.status_code == 200, status_of(archived)
        assert archived.json()["status"] == "archived"
        assert not worktree.exists()
        # The services are gone and the port released; the witness saw its directory.
        await wait_gone(server, 5)
        assert not alive(witness["pid"])
        assert port_free(web["port"])
        detail = (await board.detail(ws["id"])).json()
        (seen,) = rows_of(detail, "service:witness")
        assert "seen-present" in (seen["lastOutput"] or ""), seen
        for command_id in ("service:web", "service:witness"):
            statuses = [r["status"] for r in rows_of(detail, command_id)]
            assert statuses == ["stopped"], (command_id, rows_of(detail, command_id))
        # The operations: the supervisor's stop finished before the worktree's removal began.
        operations = await board.operations(ws["id"])
        removals = [
            op
            for op in operations
            if op["source"] == "realizer" and "worktree remove" in op["command"]
        ]
        assert len(removals) == 1, [(op["source"], op["phase"], op["command"]) for op in operations]
        removal_began = _at(removals[0]["startedAt"])
        rows = rows_of(detail, "service:web") + rows_of(detail, "service:witness")
        assert all(_at(r["stoppedAt"]) <= removal_began for r in rows), (rows, removals[0])
        stops = [
            op
            for op in operations
            if op["source"] == "supervisor"
            and op["phase"] == "workspace_teardown"
            and _at(op["startedAt"]) > _at(started.json()["operation"]["startedAt"])
        ]
        assert stops, [
            (op["source"], op["phase"], op["command"], op["startedAt"]) for op in operations
        ]
        assert all(op["status"] == "succeeded" for op in stops), stops
        assert max(_at(op["finishedAt"]) for op in stops) <= removal_began


async def test_archiving_a_shared_workspace_stops_only_its_own_services(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    # Two issues of a project whose issues share its checkout: two workspaces, one directory.
    async with runtime_board(stack, tmp_path, policy=SHARED) as board:
        first_issue, first = await board.realize("First in the checkout")
        _, second = await board.realize("Second in the checkout")
        assert first["id"] != second["id"]
        assert first["mode"] == second["mode"] == "shared_workspace", (first, second)
        assert first["cwd"] == second["cwd"] == str(board.repo), (first, second)
        served = {}
        for ws, name in ((first, "web-first"), (second, "web-second")):
            await board.set_runtime(ws["id"], {"services": [http_service(name)]})
            started = await board.control(ws["id"], "start")
            assert started.status_code == 200, status_of(started)
            (row,) = rows_of(started.json()["workspace"], f"service:{name}")
            assert row["status"] == "running", row
            assert row["cwd"] == str(board.repo), row
            served[ws["id"]] = (row, find_server_pid(row["port"]))
        (mine, my_server), (theirs, their_server) = served[first["id"]], served[second["id"]]
        born = start_time(their_server)
        # The first issue is done; its workspace is archived (the checkout stays).
        done = await board.http.patch(f"/api/issues/{first_issue['id']}", json={"status": "done"})
        assert done.status_code == 200, status_of(done)
        archived = await board.http.patch(
            f"/api/execution-workspaces/{first['id']}", json={"status": "archived"}
        )
        assert archived.status_code == 200, status_of(archived)
        assert archived.json()["status"] == "archived"
        assert (board.repo / "README.md").is_file()
        # Its own service is stopped, its port released.
        await wait_gone(my_server, 5)
        assert port_free(mine["port"])
        detail = (await board.detail(first["id"])).json()
        assert [r["status"] for r in rows_of(detail, "service:web-first")] == ["stopped"], detail
        # The other workspace's service in the same directory runs on, untouched, and answers.
        assert alive(their_server), f"the second workspace's service {theirs} was stopped"
        assert start_time(their_server) == born
        async with httpx.AsyncClient(timeout=5) as http:
            answer = await http.get(theirs["url"])
        assert answer.status_code == 200
        shown = await board.row(second["id"], theirs["id"])
        assert shown is not None
        assert (shown["status"], shown["pid"]) == ("running", theirs["pid"]), shown
        # And it stops when asked.
        stopped = await board.control(second["id"], "stop")
        assert stopped.status_code == 200, status_of(stopped)
        await wait_gone(their_server, 5)
        assert port_free(theirs["port"])
