"""`clipyard up` against an external NATS, as an operator with the servers of deploy/ runs it:
a nats-server started with `deploy/nats/nats.conf` and its users' passwords in
`CLIPYARD_NATS_PASSWORD_<USER>` (docker compose's `.env`), and `CLIPYARD_NATS_URL` a list whose
first server is dead. `up` starts no nats-server of its own, the stack answers `/api/health`, the
CLI works against the list and `status` names the servers; Ctrl-C stops the services and leaves
the external server running, its event stream intact."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clipyard_cli.bus import BusLogin, connect_cli
from clipyard_cli.home import NATS_USERS, ensure_passwords, password_env_var
from clipyard_cli.runstate import read_processes
from clipyard_cli.stack import (
    ManagedProcess,
    find_nats_config,
    find_nats_server,
    start_nats_server,
    stop_process,
)
from contracts.subjects import EVENT_STREAM
from tests.e2e.hostfacts import alive, free_port, parent_pid, processes_mentioning
from tests.upstack import SERVICES, restarts_shown, running_up

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class External:
    """A nats-server `clipyard up` did not start: its URL, process and users' passwords."""

    url: str
    process: ManagedProcess
    passwords: dict[str, str]


@pytest.fixture
def external(tmp_path: Path) -> Iterator[External]:
    """deploy/nats/nats.conf on the venv's nats-server, in a folder of its own."""
    own = tmp_path / "external-nats"
    passwords = ensure_passwords(own)
    port = free_port()
    process = start_nats_server(
        binary=find_nats_server(),
        config=find_nats_config({}, start=REPO),
        home=own,
        passwords=passwords,
        host="127.0.0.1",
        port=port,
        base_env={"PATH": "/usr/bin:/bin"},
    )
    try:
        yield External(url=f"nats://127.0.0.1:{port}", process=process, passwords=passwords)
    finally:
        stop_process(process)


def _children(pid: int) -> list[str]:
    """The command lines of ``pid``'s child processes."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and parent_pid(int(proc.name)) == pid:
            raw = (proc / "cmdline").read_bytes() if (proc / "cmdline").exists() else b""
            found.append(raw.replace(b"\0", b" ").decode(errors="replace"))
    return found


async def _stream_kept(external: External) -> bool:
    """Whether the external server answers the CLI's login and still holds ``WS_EVENTS``."""
    login = BusLogin(url=external.url, user="cli", password=external.passwords["cli"])
    nc = await connect_cli(login, initial_wait=5)
    try:
        info = await nc.jetstream().stream_info(EVENT_STREAM)
        return info.config.name == EVENT_STREAM
    finally:
        await nc.close()


def test_up_uses_an_external_nats_list_and_leaves_it_running(
    external: External, tmp_path: Path
) -> None:
    dead = f"nats://127.0.0.1:{free_port()}"
    settings = {
        "CLIPYARD_NATS_URL": f"{dead}, {external.url}",
        **{password_env_var(user): external.passwords[user] for user in NATS_USERS},
    }
    with running_up(tmp_path, **settings) as up:
        health = up.wait_healthy()
        assert set(health["services"]) == set(SERVICES)
        assert all(s["status"] == "ok" for s in health["services"].values()), health

        # No nats-server of its own: none among its children, none in its records, no password
        # generated and no JetStream store under its home.
        children = _children(up.proc.pid)
        assert len(children) == len(SERVICES), children
        assert not any("nats-server" in line for line in children), children
        assert set(read_processes(up.home)) == set(SERVICES)
        assert not (up.home / "nats").exists()

        # The CLI reaches the stack through the list, as user `cli` of the external server.
        status = up.cli("status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert f"servers    {dead}, {external.url}   (external" in status.stdout, status.stdout
        assert f"at {external.url}" in status.stdout
        assert set(restarts_shown(status.stdout)) == set(SERVICES), status.stdout
        tail = up.cli("events", "tail", "--from-start", "--no-follow")
        assert tail.returncode == 0, tail.stderr
        replay = up.cli("replay", "gateway", "--verify")
        assert replay.returncode == 0, replay.stdout + replay.stderr
        pids = read_processes(up.home)

        # Ctrl-C: the services stop, the external server keeps running with its stream.
        assert up.interrupt() == 0, up.log.read_text()
    log = up.log.read_text()
    assert "starting no nats-server" in log, log
    assert "starting nats-server" not in log, log
    assert "stopped nats-server" not in log, log
    assert not any(alive(pid) for pid in pids.values()), pids
    assert processes_mentioning(str(up.home)) == []
    assert external.process.alive(), external.process.log_tail()
    assert asyncio.run(_stream_kept(external))
