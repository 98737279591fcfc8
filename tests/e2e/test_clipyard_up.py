"""`clipyard up`, the README's first command, as a user runs it: the whole stack on embedded
defaults with the per-service NATS users of deploy/nats, the CLI against it, a runtime service
(``python3 -m http.server``) started in a workspace through HTTP, then Ctrl-C: the service is
stopped with everything else, its port released, and nothing of the home is left running."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.hostfacts import (
    alive,
    find_server_pid,
    free_port,
    group_members,
    port_free,
    processes_mentioning,
    reap,
)
from tests.e2e.runtimeutil import http_service, rows_of, runtime_board, status_of

pytestmark = pytest.mark.e2e

SERVICES = {
    "api-gateway",
    "workspace-realizer",
    "runtime-supervisor",
    "heartbeat-controller",
    "git-credentials",
}


@pytest.fixture
def up(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, str], str]]:
    home = tmp_path / "home"
    env = {
        **os.environ,
        "CLIPYARD_HOME": str(home),
        "CLIPYARD_NATS_URL": f"nats://127.0.0.1:{free_port()}",
        "CLIPYARD_HTTP_PORT": str(free_port()),
    }
    env.pop("CLIPYARD_ADMIN_KEY", None)
    log = (tmp_path / "up.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "clipyard_cli", "up"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    api = f"http://127.0.0.1:{env['CLIPYARD_HTTP_PORT']}/api"
    try:
        yield proc, env, api
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        reap(home)  # runtime services outlive the supervisor: none may outlive a failed test


def _wait_healthy(api: str, proc: subprocess.Popen[str], log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"clipyard up exited early:\n{log.read_text()}"
        try:
            health = httpx.get(f"{api}/health", timeout=2)
            if health.status_code == 200:
                return dict(health.json())
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"the stack never became healthy:\n{log.read_text()}")


@dataclass
class _UpStack:
    """The API of the running `clipyard up`, as :func:`runtime_board` uses a stack."""

    api: str
    admin_key: str

    def client(self, key: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(base_url=self.api, headers=headers, timeout=30)

    @property
    def admin(self) -> httpx.AsyncClient:
        return self.client(self.admin_key)


@dataclass(frozen=True)
class _Served:
    """A runtime service running in a workspace, as the API and the host show it."""

    row: dict[str, Any]
    server: int
    group: int


async def _serve_in_a_workspace(stack: _UpStack, tmp_path: Path) -> _Served:
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


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clipyard_cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_up_serves_all_five_then_ctrl_c_leaves_nothing(
    up: tuple[subprocess.Popen[str], dict[str, str], str], tmp_path: Path
) -> None:
    proc, env, api = up
    home = env["CLIPYARD_HOME"]
    # `clipyard up` brings NATS and all five services up: health lists each of them ok.
    health = _wait_healthy(api, proc, tmp_path / "up.log")
    assert set(health["services"]) == SERVICES
    assert all(s["status"] == "ok" for s in health["services"].values())
    # The admin key was created once, readable only by its owner.
    key_file = Path(home) / "admin.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    admin = {"Authorization": f"Bearer {key_file.read_text().strip()}"}
    company = httpx.post(f"{api}/companies", json={"name": "Up Co"}, headers=admin).json()

    # The CLI, as user `cli`, sees the event the gateway published through its own NATS user.
    for _ in range(50):
        tail = _cli(env, "events", "tail", "--from-start", "--no-follow")
        if "company.created.v1" in tail.stdout:
            break
        time.sleep(0.1)
    assert tail.returncode == 0, tail.stderr
    assert "company.created.v1" in tail.stdout
    assert company["id"] in tail.stdout
    audit = _cli(env, "audit", company["id"])
    assert audit.returncode == 0, audit.stderr
    assert "api-gateway" in audit.stdout or "gateway" in audit.stdout
    status = _cli(env, "status")
    assert status.returncode == 0, status.stderr
    for service in SERVICES:
        assert service in status.stdout
    for service in ("gateway", "realizer", "supervisor", "controller", "credentials"):
        replay = _cli(env, "replay", service, "--verify")
        assert replay.returncode == 0, replay.stdout + replay.stderr

    # A runtime service runs in an issue's workspace, in its own session (it outlives the
    # supervisor by design): only the stop-all of Ctrl-C ends it.
    stack = _UpStack(api=api.removesuffix("/api"), admin_key=key_file.read_text().strip())
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
