"""`clipyard up`, the README's first command, as a user runs it: the whole stack on embedded
defaults with the per-service NATS users of deploy/nats, the CLI against it, then Ctrl-C."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e

SERVICES = {
    "api-gateway",
    "workspace-realizer",
    "runtime-supervisor",
    "heartbeat-controller",
    "git-credentials",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line or environment mentions ``text``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (proc / "environ").read_bytes().decode(errors="replace")
            state = (proc / "stat").read_text().split()[2]
        except OSError:
            continue
        if state != "Z" and (text in cmdline or text in environ):
            found.append(f"{proc.name}: {cmdline.strip()}")
    return found


@pytest.fixture
def up(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, str], str]]:
    home = tmp_path / "home"
    env = {
        **os.environ,
        "CLIPYARD_HOME": str(home),
        "CLIPYARD_NATS_URL": f"nats://127.0.0.1:{_free_port()}",
        "CLIPYARD_HTTP_PORT": str(_free_port()),
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


def _wait_healthy(api: str, proc: subprocess.Popen[str], log: Path) -> dict[str, object]:
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
    assert set(health["services"]) == SERVICES  # type: ignore[arg-type]
    assert all(s["status"] == "ok" for s in health["services"].values())  # type: ignore[attr-defined]
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

    # Ctrl-C: stop-all, every service, then NATS; the command exits cleanly and nothing is left.
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(60) == 0, (tmp_path / "up.log").read_text()
    leftovers = _processes_mentioning(home)
    assert leftovers == [], leftovers
