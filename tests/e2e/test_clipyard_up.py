"""`clipyard up`, the README's first command, as a user runs it: the whole stack on embedded
defaults with the per-service NATS users of deploy/nats, the CLI against it, a runtime service
(``python3 -m http.server``) started in a workspace through HTTP, then Ctrl-C: the service is
stopped with everything else, its port released, and nothing of the home is left running.

And `clipyard up` keeps its processes running: nats-server or a service SIGKILLed is started
again (new pid, health 200 again, the event stream kept), while the runtime service keeps its
pid throughout; `clipyard status` shows how often and after what each one was restarted."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from clipyard_cli.runstate import read_processes
from tests.e2e.hostfacts import (
    alive,
    find_server_pid,
    group_members,
    port_free,
    processes_mentioning,
    start_time,
    wait_until,
)
from tests.e2e.runtimeutil import http_service, rows_of, runtime_board, status_of
from tests.upstack import SERVICES, Up, UpStack, restarts_shown, running_up

pytestmark = pytest.mark.e2e


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Up]:
    with running_up(tmp_path) as running:
        yield running


@dataclass(frozen=True)
class _Served:
    """A runtime service running in a workspace, as the API and the host show it."""

    row: dict[str, Any]
    server: int
    group: int


async def _serve_in_a_workspace(stack: UpStack, tmp_path: Path) -> _Served:
    """An issue's git-worktree workspace on a local repository, the project workspace's runtime
    config (the README's ``python3 -m http.server``), and its start through HTTP."""
    async with runtime_board(stack, tmp_path, name="Up Runtime") as board:
        _, ws = await board.realize("Serve while up")
        await board.set_project_runtime({"services": [http_service("web")]})
        # Started at once: the gateway sends what the realizer just said, the supervisor waits for it.
        started = await board.control(ws["id"], "start", workspaceCommandId="service:web")
        assert started.status_code == 200, status_of(started)
        (row,) = rows_of(started.json()["workspace"], "service:web")
        assert row["status"] == "running", row
        assert row["cwd"] == ws["cwd"], row
    server = find_server_pid(row["port"])
    return _Served(row=row, server=server, group=os.getpgid(server))


def test_up_serves_all_five_then_ctrl_c_leaves_nothing(up: Up, tmp_path: Path) -> None:
    proc, api, home = up.proc, up.api, str(up.home)
    # `clipyard up` brings NATS and all five services up: health lists each of them ok.
    health = up.wait_healthy()
    assert set(health["services"]) == set(SERVICES)
    assert all(s["status"] == "ok" for s in health["services"].values())
    # The admin key was created once, readable only by its owner.
    key_file = Path(home) / "admin.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    admin = {"Authorization": f"Bearer {key_file.read_text().strip()}"}
    company = httpx.post(f"{api}/companies", json={"name": "Up Co"}, headers=admin).json()

    # The CLI, as user `cli`, sees the event the gateway published through its own NATS user.
    for _ in range(50):
        tail = up.cli("events", "tail", "--from-start", "--no-follow")
        if "company.created.v1" in tail.stdout:
            break
        time.sleep(0.1)
    assert tail.returncode == 0, tail.stderr
    assert "company.created.v1" in tail.stdout
    assert company["id"] in tail.stdout
    # --type takes an aggregate (the filter of the API's ?types=); a stored class name is a
    # clear error naming its type, never handed to NATS.
    only = up.cli("events", "tail", "--from-start", "--no-follow", "--type", "company")
    assert only.returncode == 0, only.stderr
    assert "Company created" in only.stdout, only.stdout
    assert all(line.split()[1].startswith("company.") for line in only.stdout.splitlines())
    refused = up.cli("events", "tail", "--type", "Provisioned")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "'Provisioned' (workspace.provisioned: recorded in audit trails" in refused.stderr
    assert "invalid subject token" not in refused.stderr
    audit = up.cli("audit", company["id"])
    assert audit.returncode == 0, audit.stderr
    assert "api-gateway" in audit.stdout or "gateway" in audit.stdout
    assert "  company.created.v1  Company created  " in audit.stdout, audit.stdout
    status = up.cli("status")
    assert status.returncode == 0, status.stderr
    # One instance of each service: it answers, leads, and holds its lease with the first token.
    shown = status.stdout.splitlines()
    leases_at = next(i for i, line in enumerate(shown) if line.startswith("LEASE "))
    for service in SERVICES:
        rows = [line.split() for line in shown[:leases_at] if line.startswith(f"{service} ")]
        assert [(row[1], row[-2], row[-1]) for row in rows] == [("ok", "leader", "ok")], shown
        lease = next(line for line in shown[leases_at:] if line.startswith(f"{service} "))
        assert lease.split() == [service, rows[0][2], "1"], shown
    assert "R1 on a single server (no cluster)" in status.stdout
    for service in ("gateway", "realizer", "supervisor", "controller", "credentials"):
        replay = up.cli("replay", service, "--verify")
        assert replay.returncode == 0, replay.stdout + replay.stderr

    # A runtime service runs in an issue's workspace, in its own session (it outlives the
    # supervisor by design): only the stop-all of Ctrl-C ends it.
    stack = up.stack
    served = asyncio.run(_serve_in_a_workspace(stack, tmp_path))
    port = served.row["port"]
    assert httpx.get(served.row["url"], timeout=5).status_code == 200
    assert served.group != os.getpgid(proc.pid)
    assert not port_free(port)

    # Ctrl-C: stop-all, every service, then NATS; the command exits cleanly and nothing is left.
    os.killpg(proc.pid, signal.SIGINT)
    log = tmp_path / "up.log"
    assert proc.wait(60) == 0, log.read_text()
    assert "runtime services stopped: 1," in log.read_text(), log.read_text()
    assert not alive(served.server), f"the runtime service {served.row} still runs"
    assert group_members(served.group) == [], group_members(served.group)
    assert port_free(port), f"port {port} of the runtime service is still held"
    leftovers = processes_mentioning(home)
    assert leftovers == [], leftovers


def _restarted(home: Path, name: str, old: int) -> int | None:
    """The pid of ``name`` once `clipyard up` recorded a new live one."""
    pid = read_processes(home).get(name)
    return pid if pid is not None and pid != old and alive(pid) else None


async def _healthy(api: str) -> bool:
    async with httpx.AsyncClient(timeout=2) as http:
        try:
            return (await http.get(f"{api}/health")).status_code == 200
        except httpx.TransportError:
            return False


async def test_up_restarts_nats_and_services_that_die_and_runtime_services_live_on(
    up: Up, tmp_path: Path
) -> None:
    proc, api, home, log = up.proc, up.api, up.home, up.log
    up.wait_healthy()
    stack = up.stack
    async with runtime_board(stack, tmp_path, name="Crash Co") as board:
        _, ws = await board.realize("Serve through crashes")
        await board.set_project_runtime({"services": [http_service("web")]})
        started = await board.control(ws["id"], "start", workspaceCommandId="service:web")
        assert started.status_code == 200, status_of(started)
        (row,) = rows_of(started.json()["workspace"], "service:web")
        server = find_server_pid(row["port"])
        born = start_time(server)
        before = read_processes(home)

        # nats-server SIGKILLed: `up` says so and starts it again on the same port and store.
        os.kill(before["nats-server"], signal.SIGKILL)
        await wait_until(
            lambda: _restarted(home, "nats-server", before["nats-server"]), 20, "a new nats-server"
        )
        await wait_until(lambda: _healthy(api), 30, "GET /api/health 200 after NATS came back")
        assert proc.poll() is None, log.read_text()
        # No stop-all was sent: the runtime service is the same process, still serving.
        assert alive(server)
        assert start_time(server) == born
        assert find_server_pid(row["port"]) == server
        assert httpx.get(row["url"], timeout=5).status_code == 200
        # WS_EVENTS is file-backed under the home: the events from before the kill are still there.
        tail = up.cli("events", "tail", "--from-start", "--no-follow")
        assert tail.returncode == 0, tail.stderr
        assert board.company["id"] in tail.stdout

        # The runtime-supervisor and the workspace-realizer SIGKILLed: both come back; the new
        # supervisor adopts the runtime service (same pid), the new realizer realizes.
        for name in ("runtime-supervisor", "workspace-realizer"):
            os.kill(before[name], signal.SIGKILL)
        for name in ("runtime-supervisor", "workspace-realizer"):
            old = before[name]
            await wait_until(partial(_restarted, home, name, old), 20, f"a new {name}")
        await wait_until(lambda: _healthy(api), 30, "GET /api/health 200 after the restarts")
        adopted = await board.wait_row(
            ws["id"], row["id"], lambda r: r["status"] == "running", "the service adopted", 30
        )
        assert adopted["pid"] == row["pid"], (adopted, row)
        assert alive(server)
        assert start_time(server) == born
        _, second = await board.realize("Realized after the restart")
        assert second["status"] == "active", second

    text = log.read_text()
    assert re.search(r"nats-server \(pid \d+\) exited \(signal 9\)", text), text
    assert "nats-server is back" in text, text
    assert "workspace-realizer is back" in text, text
    assert "clipyard: stopping" not in text, text  # no stop-all, nothing stopped
    status = up.cli("status")
    assert status.returncode == 0, status.stdout + status.stderr
    restarts = restarts_shown(status.stdout)
    for name in ("nats-server", "runtime-supervisor", "workspace-realizer"):
        assert restarts[name][0] == 1, status.stdout
        assert "after signal 9" in restarts[name][1], status.stdout
    for name in ("git-credentials", "heartbeat-controller", "api-gateway"):
        assert restarts[name] == (0, "-"), status.stdout

    # Only Ctrl-C stops everything, runtime services included.
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(60) == 0, log.read_text()
    assert "runtime services stopped: 1," in log.read_text(), log.read_text()
    assert not alive(server)
