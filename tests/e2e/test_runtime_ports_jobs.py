"""Ports, jobs and control errors through HTTP against the running stack: a fixed port wanted by
two workspaces (the second refused, naming the first), 50 concurrent auto-port starts (no
collision), a job whose output passes 256 KiB (capped, marked truncated), and reference case 64
(``run`` on a service and ``start`` on a job are 422, an unknown action is 404)."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.hostfacts import (
    alive,
    find_server_pid,
    free_port,
    port_free,
)
from tests.e2e.runtimeutil import (
    HTTP_SERVER,
    finished,
    http_service,
    rows_of,
    runtime_board,
    status_of,
)

pytestmark = pytest.mark.e2e

CAP = 256 * 1024


def _fixed(port: int) -> dict[str, Any]:
    return {
        "name": "web",
        "command": HTTP_SERVER,
        "port": {"value": port},
        "readiness": {"type": "http", "urlTemplate": "http://127.0.0.1:{{port}}/"},
    }


async def test_fixed_port_of_another_workspace_is_refused_naming_it(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    port = free_port()
    async with runtime_board(stack, tmp_path) as board:
        _, first = await board.realize("First on the port")
        _, second = await board.realize("Second on the port")
        for ws in (first, second):
            await board.set_runtime(ws["id"], {"services": [_fixed(port)]})
        started = await board.control(first["id"], "start")
        assert started.status_code == 200, status_of(started)
        (row,) = rows_of(started.json()["workspace"], "service:web")
        assert row["status"] == "running", row
        assert row["port"] == port
        server = find_server_pid(port)
        refused = await board.control(second["id"], "start")
        assert refused.status_code == 409, status_of(refused)
        error = refused.json()
        assert error["code"] == "port_conflict", error
        assert first["id"] in refused.text, f"the owner is not named: {error}"
        # Nothing of the second workspace runs; the first still serves.
        detail = (await board.detail(second["id"])).json()
        assert [r for r in detail["runtimeServices"] if r["status"] == "running"] == []
        assert find_server_pid(port) == server
        # Once the first stops, its reservation is released and the second gets the port.
        assert (await board.control(first["id"], "stop")).status_code == 200
        assert not alive(server)
        taken = await board.control(second["id"], "start")
        assert taken.status_code == 200, status_of(taken)
        (row,) = [r for r in rows_of(taken.json()["workspace"], "service:web")]
        assert row["status"] == "running", row
        assert row["port"] == port
        assert (await board.control(second["id"], "stop")).status_code == 200
        assert port_free(port)


WORKSPACES, PER_WORKSPACE = 5, 10


async def test_fifty_concurrent_auto_port_starts_do_not_collide(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    # Each service serves a folder of its worktree holding its own name (a contained service
    # sees nothing else), so a port answering for another service than the one it was given to
    # shows.
    def service(w: int, s: int) -> dict[str, Any]:
        folder = shlex.quote(f"who/w{w}s{s}")
        command = (f"mkdir -p {folder} && printf w{w}s{s} > {folder}/who.txt && "
                   f"exec {HTTP_SERVER} --directory {folder}")  # fmt: skip
        return http_service(f"s{s}", command=command)

    async with runtime_board(stack, tmp_path, timeout=180) as board:
        workspaces = [(await board.realize(f"Many {w}"))[1] for w in range(WORKSPACES)]
        for w, ws in enumerate(workspaces):
            config = {"services": [service(w, s) for s in range(PER_WORKSPACE)]}
            await board.set_runtime(ws["id"], config)
        # A command named right after its configuration was saved is found (read-your-writes).
        for ws in workspaces:
            last = f"service:s{PER_WORKSPACE - 1}"
            probe = await board.control(ws["id"], "stop", workspaceCommandId=last)
            assert probe.status_code == 200, status_of(probe)

        async def control(w: int, action: str, **body: Any) -> dict[str, Any]:
            # An action past the gateway's deadline answers 202: its operation is followed.
            workspace_id = workspaces[w]["id"]
            answer = await board.control(workspace_id, action, **body)
            return await finished(board, workspace_id, answer, timeout=150, interval=0.5)

        outcomes = await asyncio.gather(
            *(
                control(w, "start", workspaceCommandId=f"service:s{s}")
                for w in range(WORKSPACES)
                for s in range(PER_WORKSPACE)
            ),
            return_exceptions=True,
        )
        failures = [str(o) for o in outcomes if isinstance(o, BaseException)]
        assert failures == [], failures
        for body in outcomes:
            assert isinstance(body, dict)
            assert body["operation"]["status"] == "succeeded", body["operation"]
        ports: dict[int, str] = {}
        for w, ws in enumerate(workspaces):
            detail = (await board.detail(ws["id"])).json()
            for s in range(PER_WORKSPACE):
                rows = [r for r in rows_of(detail, f"service:s{s}") if r["status"] == "running"]
                assert len(rows) == 1, (w, s, rows_of(detail, f"service:s{s}"))
                ports[rows[0]["port"]] = f"w{w}s{s}"
        assert len(ports) == WORKSPACES * PER_WORKSPACE, sorted(ports)
        async with httpx.AsyncClient(timeout=5) as http:
            for port, who in ports.items():
                answer = await http.get(f"http://127.0.0.1:{port}/who.txt")
                assert answer.status_code == 200, (port, who)
                assert answer.text == who, f"port {port} serves {answer.text}, not {who}"
        stops = await asyncio.gather(*(control(w, "stop") for w in range(WORKSPACES)))
        assert [b["operation"]["status"] for b in stops] == ["succeeded"] * WORKSPACES, stops
        assert [p for p in ports if not port_free(p)] == []


@pytest.mark.both_stores
async def test_job_output_over_256_kib_is_capped_and_marked_truncated(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    # 400,000 bytes of 'x' then a marker on stdout; a short line on stderr.
    command = "head -c 400000 /dev/zero | tr '\\0' x; echo; echo END-OF-OUTPUT; echo on-stderr >&2"
    async with runtime_board(stack, tmp_path) as board:
        _, ws = await board.realize("Loud job")
        await board.set_runtime(ws["id"], {"jobs": [{"name": "flood", "command": command}]})
        ran = await board.control(
            ws["id"], "run", path="runtime-commands", workspaceCommandId="job:flood"
        )
        assert ran.status_code == 200, status_of(ran)
        operation = ran.json()["operation"]
        assert operation["source"] == "supervisor", operation
        assert operation["exitCode"] == 0, operation
        detail = await board.http.get(f"/api/workspace-operations/{operation['id']}")
        assert detail.status_code == 200, status_of(detail)
        op = detail.json()
        assert op["status"] == "succeeded", op["status"]
        assert op["exitCode"] == 0
        assert op["truncated"] is True
        assert op["stdoutExcerpt"].rstrip().endswith("END-OF-OUTPUT")
        assert set(op["stdoutExcerpt"].rstrip().removesuffix("END-OF-OUTPUT").strip()) == {"x"}
        assert len(op["stdoutExcerpt"].encode()) <= 64 * 1024
        assert op["stderrExcerpt"].strip() == "on-stderr"
        # The stored output is capped at 256 KiB per stream, and keeps the end.
        full = await board.http.get(
            f"/api/workspace-operations/{operation['id']}/output",
            params={"stream": "stdout", "offset": 0, "length": CAP},
        )
        assert full.status_code == 200, status_of(full)
        assert int(full.headers["X-Total-Bytes"]) <= CAP, full.headers
        assert len(full.content) <= CAP
        assert full.text.rstrip().endswith("END-OF-OUTPUT")
        # The job is listed among the workspace's operations.
        listed = await board.operations(ws["id"])
        assert operation["id"] in [row["id"] for row in listed]


async def test_control_errors_of_case_64(stack: Any, tmp_path: Path, reaper: None) -> None:
    config = {
        "services": [http_service("web")],
        "jobs": [{"name": "hello", "command": "echo hello"}],
    }
    async with runtime_board(stack, tmp_path) as board:
        _, ws = await board.realize("Wrong actions")
        await board.set_runtime(ws["id"], config)
        # The job runs (the config has reached the supervisor); then the wrong pairings.
        ran = await board.control(ws["id"], "run", workspaceCommandId="job:hello")
        assert ran.status_code == 200, status_of(ran)
        run_service = await board.control(ws["id"], "run", workspaceCommandId="service:web")
        assert run_service.status_code == 422, status_of(run_service)
        assert run_service.json()["code"] == "unprocessable"
        start_job = await board.control(ws["id"], "start", workspaceCommandId="job:hello")
        assert start_job.status_code == 422, status_of(start_job)
        assert start_job.json()["code"] == "unprocessable"
        explode = await board.control(ws["id"], "explode", workspaceCommandId="service:web")
        assert explode.status_code == 404, status_of(explode)
        assert "explode" in explode.json()["error"]
        # None of them started anything.
        detail = (await board.detail(ws["id"])).json()
        assert [r for r in detail["runtimeServices"] if r["status"] == "running"] == []
