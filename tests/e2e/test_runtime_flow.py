"""Runtime services through HTTP against the running stack: a ``python3 -m http.server`` with an
auto port and http readiness starts, answers, shows on the workspace, logs and stops; killed from
outside it is recorded failed with its signal; a supervisor SIGKILLed and restarted adopts it
without restarting it; a service that ends while no supervisor runs is recorded with its real exit
status after the restart.

What the API says is checked against the host: the process in ``/proc`` (pid, start time), the
port (a bind of our own), and HTTP to the service itself.
"""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.hostfacts import (
    alive,
    find_server_pid,
    parent_pid,
    port_free,
    start_time,
    wait_gone,
    wait_until,
)
from tests.e2e.runtimeutil import (
    http_service,
    rows_of,
    runtime_board,
    status_of,
)

pytestmark = pytest.mark.e2e

WEB = "service:web"
PORT_RANGE = (41000, 41999)
"""The default ``CLIPYARD_PORT_RANGE``."""


async def _get(url: str) -> httpx.Response | None:
    async with httpx.AsyncClient(timeout=5) as http:
        try:
            return await http.get(url)
        except httpx.TransportError:
            return None


async def _start_web(board: Any, workspace_id: str) -> dict[str, Any]:
    answer = await board.control(workspace_id, "start", workspaceCommandId=WEB)
    assert answer.status_code == 200, status_of(answer)
    body = answer.json()
    assert body["operation"]["status"] == "succeeded", body["operation"]
    assert body["operation"]["source"] == "supervisor", body["operation"]
    (row,) = [r for r in rows_of(body["workspace"], WEB) if r["status"] == "running"]
    return row


@pytest.mark.both_stores
async def test_http_server_starts_answers_shows_logs_and_stops(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    async with runtime_board(stack, tmp_path) as board:
        _, ws = await board.realize("Serve the docs")
        await board.set_runtime(ws["id"], {"services": [http_service("web")]})
        row = await _start_web(board, ws["id"])
        port, url = row["port"], row["url"]
        assert PORT_RANGE[0] <= port <= PORT_RANGE[1], row
        assert url.rstrip("/") == f"http://127.0.0.1:{port}", row
        assert row["healthStatus"] == "healthy", row
        assert row["cwd"] == ws["cwd"], row
        # It answers on its URL, serving the worktree (its cwd).
        listing = await _get(url)
        assert listing is not None
        assert listing.status_code == 200
        assert "README.md" in listing.text
        server = find_server_pid(port)
        assert not port_free(port)
        # The workspace detail shows it (health re-probed on the read).
        detail = await board.detail(ws["id"])
        assert "X-Clipyard-Warning" not in detail.headers, detail.headers
        (shown,) = [r for r in detail.json()["runtimeServices"] if r["id"] == row["id"]]
        assert shown["status"] == "running", shown
        assert shown["port"] == port
        assert shown["url"] == url
        assert shown["healthStatus"] == "healthy", shown
        assert shown["serviceName"] == "web"
        assert shown["serviceIndex"] == 0
        # The pid shown is the command's sandbox, an ancestor of the server in its group.
        ancestors, pid = [], server
        while pid is not None and pid > 1:
            ancestors.append(pid)
            pid = parent_pid(pid)
        assert shown["pid"] in ancestors, (shown["pid"], server)
        assert os.getpgid(server) == os.getpgid(shown["pid"])
        # Its log: our own request, by its unique path, in the last 20 lines.
        probe = f"/e2e-probe-{uuid.uuid4().hex}"
        missing = await _get(url.rstrip("/") + probe)
        assert missing is not None
        assert missing.status_code == 404
        logs_url = f"/api/execution-workspaces/{ws['id']}/runtime-services/{row['id']}/logs"

        async def logged() -> httpx.Response | None:
            answer = await board.http.get(logs_url, params={"tail": 20})
            assert answer.status_code == 200, status_of(answer)
            return answer if probe in answer.text else None

        log = await wait_until(logged, 10, f"{probe} in the service's log")
        assert log.headers["content-type"].startswith("text/plain")
        assert len(log.text.splitlines()) <= 20
        assert int(log.headers["X-Total-Bytes"]) >= len(log.content)
        # Stop: the process group is gone and the port released.
        stopped = await board.control(ws["id"], "stop", workspaceCommandId=WEB)
        assert stopped.status_code == 200, status_of(stopped)
        assert stopped.json()["operation"]["status"] == "succeeded", stopped.json()["operation"]
        (after,) = [r for r in rows_of(stopped.json()["workspace"], WEB) if r["id"] == row["id"]]
        assert after["status"] == "stopped", after
        assert not alive(server)
        assert port_free(port)
        assert await _get(url) is None


async def test_sigkill_from_outside_is_recorded_failed_with_signal_9(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    async with runtime_board(stack, tmp_path) as board:
        _, ws = await board.realize("Crash me")
        await board.set_runtime(ws["id"], {"services": [http_service("web")]})
        row = await _start_web(board, ws["id"])
        server = find_server_pid(row["port"])
        os.kill(server, signal.SIGKILL)
        failed = await board.wait_row(
            ws["id"], row["id"], lambda r: r["status"] == "failed", "the service recorded failed"
        )
        assert failed["exitSignal"] == signal.SIGKILL, failed
        assert failed["exitCode"] is None, failed
        assert failed["stoppedAt"] is not None, failed
        assert port_free(row["port"])
        # A failed service starts again (its port reservation was released with it).
        again = await _start_web(board, ws["id"])
        assert again["id"] != row["id"]
        answered = await _get(again["url"])
        assert answered is not None
        assert answered.status_code == 200
        stopped = await board.control(ws["id"], "stop", workspaceCommandId=WEB)
        assert stopped.status_code == 200, status_of(stopped)
        assert port_free(again["port"])


@pytest.mark.both_stores
async def test_restarted_supervisor_adopts_a_running_service_and_stops_it(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    supervisor = stack.processes["runtime_supervisor"]
    async with runtime_board(stack, tmp_path) as board:
        _, ws = await board.realize("Survive a crash")
        await board.set_runtime(ws["id"], {"services": [http_service("web")]})
        row = await _start_web(board, ws["id"])
        port, url = row["port"], row["url"]
        server = find_server_pid(port)
        born = start_time(server)
        wrapper_group = os.getpgid(server)
        # The supervisor dies without a word; the service keeps serving.
        old_pid = supervisor.pid
        supervisor.kill()
        answered = await _get(url)
        assert answered is not None
        assert answered.status_code == 200
        await supervisor.restart()
        assert supervisor.pid != old_pid
        adopted = await board.wait_row(
            ws["id"],
            row["id"],
            lambda r: r["status"] == "running",
            "the service shown running after the supervisor's restart",
        )
        # The same process: not restarted (same pid, same start time, same group).
        assert adopted["pid"] == row["pid"], (adopted, row)
        assert adopted["port"] == port
        assert adopted["healthStatus"] == "healthy", adopted
        assert alive(server)
        assert start_time(server) == born
        assert os.getpgid(server) == wrapper_group
        assert find_server_pid(port) == server
        answered = await _get(url)
        assert answered is not None
        assert answered.status_code == 200
        detail = (await board.detail(ws["id"])).json()
        assert [r["id"] for r in rows_of(detail, WEB) if r["status"] == "running"] == [row["id"]]
        # And the new supervisor can stop it: the group is gone, the port released.
        stopped = await board.control(ws["id"], "stop", workspaceCommandId=WEB)
        assert stopped.status_code == 200, status_of(stopped)
        (after,) = [r for r in rows_of(stopped.json()["workspace"], WEB) if r["id"] == row["id"]]
        assert after["status"] == "stopped", after
        await wait_gone(server, 5)
        assert port_free(port)


async def test_exit_while_no_supervisor_runs_is_recorded_after_restart(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    supervisor = stack.processes["runtime_supervisor"]
    # The flag lies in the worktree: a contained service sees nothing outside it.
    command = "while [ ! -e flag ]; do sleep 0.1; done; echo leaving now; exit 7"
    async with runtime_board(stack, tmp_path) as board:
        _, ws = await board.realize("Exit alone")
        flag = Path(ws["cwd"]) / "flag"
        await board.set_runtime(ws["id"], {"services": [{"name": "waiter", "command": command}]})
        answer = await board.control(ws["id"], "start", workspaceCommandId="service:waiter")
        assert answer.status_code == 200, status_of(answer)
        (row,) = rows_of(answer.json()["workspace"], "service:waiter")
        assert row["status"] == "running", row
        pid = row["pid"]
        assert alive(pid)
        supervisor.kill()
        flag.touch()
        await wait_gone(pid, 10)
        await supervisor.restart()
        ended = await board.wait_row(
            ws["id"],
            row["id"],
            lambda r: r["status"] not in ("running", "starting"),
            "the service's end recorded after the restart",
        )
        assert ended["status"] == "failed", ended
        assert ended["exitCode"] == 7, ended
        assert ended["exitSignal"] is None, ended
        assert "leaving now" in (ended["lastOutput"] or ""), ended
        # Nothing was restarted in its place.
        detail = (await board.detail(ws["id"])).json()
        assert [r for r in rows_of(detail, "service:waiter") if r["status"] == "running"] == []
