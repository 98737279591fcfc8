"""`clipyard cluster up`, the replicated control plane on one machine, as a user runs it: three
NATS nodes, one PostgreSQL with a role per service, two replicas of api-gateway,
heartbeat-controller and git-credentials, one realizer and one supervisor. A company created
through one gateway is listed through the other within a second; `$SRV.PING` shows each
replica under its own instance id; Ctrl-C leaves nothing running.

And :class:`~clipyard_cli.clusterstack.ClusterStack`, which the cluster test tier uses as a
fixture, takes replicas and NATS nodes down and brings them back as it says."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from clipyard_cli.bus import BusLogin, connect_cli
from clipyard_cli.clusterprocs import ClusterPorts
from clipyard_cli.clusterstack import ClusterStack
from natsbus.instances import ping_instances
from tests.e2e.hostfacts import alive, parent_pid, port_free, reap

pytestmark = pytest.mark.e2e

REPLICATED = ("api-gateway", "heartbeat-controller", "git-credentials", "runtime-supervisor")
REALIZERS = ("workspace-realizer",)
"""Three: -1 serves the host part, -2 and -3 the company-wide part."""


def _free_bases() -> tuple[int, int]:
    """``--http-port`` and ``--nats-port`` whose every derived port is free now."""
    for _ in range(200):
        http, nats = random.randrange(20000, 30000), random.randrange(30000, 40000)
        if all(port_free(port) for port in ClusterPorts.from_bases(http, nats).every()):
            return http, nats
    raise AssertionError("no free ports for the cluster")


def _descendants(root: int) -> dict[int, str]:
    """Every live descendant of ``root``: pid -> command line."""
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        children = set()
        for name in os.listdir("/proc"):
            if name.isdigit() and parent_pid(int(name)) in frontier and alive(int(name)):
                children.add(int(name))
        children -= found.keys()
        for pid in children:
            try:
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            found[pid] = raw.replace(b"\0", b" ").decode(errors="replace").strip()
        frontier = children
    return found


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(): v.decode(errors="replace") for k, v in pairs}


@pytest.fixture
def cluster_up(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, Path, int]]:
    """`clipyard cluster up` on free ports, its home under ``tmp_path``; SIGKILLed if a test
    leaves it running."""
    home, log = tmp_path / "home", tmp_path / "cluster.log"
    http, nats = _free_bases()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLIPYARD_")}
    argv = [sys.executable, "-m", "clipyard_cli", "cluster", "up", "--home", str(home)]
    argv += ["--http-port", str(http), "--nats-port", str(nats)]
    with log.open("w") as out:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    try:
        yield proc, home, log, http
    finally:
        if proc.poll() is None:  # a failed test: stop it as Ctrl-C would, else kill it
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        reap(home)


def _wait_banner(proc: subprocess.Popen[str], log: Path, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text()
        if "Press Ctrl-C to stop" in text:
            return text
        assert proc.poll() is None, f"clipyard cluster up exited early:\n{text}"
        time.sleep(0.2)
    raise AssertionError(f"clipyard cluster up was not ready in {timeout:g} s:\n{log.read_text()}")


async def _instances(home: Path, nats_urls: list[str]) -> dict[str, set[str]]:
    """Each service's instance ids, from every `$SRV.PING` answer (as the CLI user)."""
    password = json.loads((home / "nats" / "passwords.json").read_text())["cli"]
    login = BusLogin(url=",".join(nats_urls), user="cli", password=password)
    nc = await connect_cli(login)
    try:
        pings = {name: await ping_instances(nc, name) for name in (*REPLICATED, *REALIZERS)}
    finally:
        await nc.close()
    return {name: {ping.instance for ping in answers} for name, answers in pings.items()}


def test_cluster_up_serves_through_both_gateways_then_ctrl_c_leaves_nothing(
    cluster_up: tuple[subprocess.Popen[str], Path, Path, int],
) -> None:
    proc, home, log, http = cluster_up
    banner = _wait_banner(proc, log)
    gateways = [f"http://127.0.0.1:{http}/api", f"http://127.0.0.1:{http + 1}/api"]
    for api in gateways:
        assert api in banner
        assert httpx.get(f"{api}/health", timeout=5).status_code == 200
    nats_line = next(line for line in banner.splitlines() if line.startswith("  NATS:"))
    nats_urls = re.findall(r"nats://127\.0\.0\.1:\d+", nats_line)
    assert len(nats_urls) == 3, banner
    assert re.search(r"postgresql://postgres@127\.0\.0\.1:\d+/clipyard\s", banner), banner
    assert str(home / "admin.key") in banner

    # Written through gateway A, listed through gateway B within a second.
    admin = {"Authorization": f"Bearer {(home / 'admin.key').read_text().strip()}"}
    created = httpx.post(f"{gateways[0]}/companies", json={"name": "Two Gates"}, headers=admin)
    assert created.status_code == 201, created.text
    company = created.json()["id"]
    deadline = time.monotonic() + 1.0
    while True:
        listed = httpx.get(f"{gateways[1]}/companies", headers=admin, timeout=5)
        assert listed.status_code == 200, listed.text
        if company in {c["id"] for c in listed.json()}:
            break
        assert time.monotonic() < deadline, f"gateway B did not list {company} within 1 s"
        time.sleep(0.05)

    # Every replica answers $SRV.PING under its own instance id.
    instances = asyncio.run(_instances(home, nats_urls))
    for name in REPLICATED:
        assert instances[name] == {f"{name}-1", f"{name}-2"}, instances
    for name in REALIZERS:
        assert instances[name] == {f"{name}-{i}" for i in (1, 2, 3, 4)}, instances

    # What runs: 3 nats-servers, a postgres, 12 service processes, each with its own settings
    # (two worker nodes: a realizer host part and a supervisor each).
    running = _descendants(proc.pid)
    nats_pids = [pid for pid, cmd in running.items() if "nats-server" in cmd]
    services = {
        pid: _environ(pid)
        for pid, cmd in running.items()
        if parent_pid(pid) == proc.pid and re.search(r"python\S* -m ", cmd)
    }
    pg_data = [m[1] for cmd in running.values() if (m := re.search(r"-D (\S+)", cmd))]
    assert len(nats_pids) == 3, running
    assert len(pg_data) == 1, running
    assert len(services) == 12, running
    for env in services.values():
        token = env["CLIPYARD_NATS_USER"]
        assert env["CLIPYARD_STORE"] == "postgres"
        assert env["CLIPYARD_EVENT_REPLICAS"] == "3"
        assert env["CLIPYARD_NATS_URL"] == ",".join(nats_urls)
        assert env["CLIPYARD_POSTGRES_DSN"].startswith(f"postgresql://clipyard_{token}:")
    assert len({env["CLIPYARD_INSTANCE_ID"] for env in services.values()}) == 12
    parts = sorted(
        env.get("CLIPYARD_REALIZER_PART", "") for env in services.values()
        if env["CLIPYARD_NATS_USER"] == "realizer"
    )  # fmt: skip
    assert parts == ["company", "company", "host", "host"]
    nodes = sorted(
        env["CLIPYARD_NODE_ID"] for env in services.values()
        if env["CLIPYARD_NATS_USER"] == "supervisor"
    )  # fmt: skip
    assert nodes == ["local", "nodeb"]

    # Ctrl-C: services, then NATS, then PostgreSQL stop; the command exits 0 and nothing is left.
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(60) == 0, log.read_text()
    left = {pid: cmd for pid, cmd in running.items() if alive(pid)}
    assert left == {}, left
    assert not Path(pg_data[0]).exists()
    assert "nothing of the cluster runs any more" in log.read_text()


async def test_cluster_stack_kills_restarts_replicas_and_nats_nodes(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLIPYARD_")}
    cluster = ClusterStack(tmp_path / "home", ports=ClusterPorts.free(), env=env)
    pids: list[int] = []
    try:
        await cluster.start()
        pids = [r.process.pid for r in cluster.replicas if r.process is not None]
        assert await cluster.live_instances("gateway") == {"api-gateway-1", "api-gateway-2"}

        # SIGSTOP, then SIGCONT: the same process answers again.
        frozen = cluster.pid("heartbeat-controller", 2)
        cluster.kill("heartbeat-controller", 2, signal.SIGSTOP)
        assert "heartbeat-controller-2" not in await cluster.live_instances("controller")
        cluster.kill("heartbeat-controller", 2, signal.SIGCONT)
        await cluster.wait_ready(20)
        assert cluster.pid("heartbeat-controller", 2) == frozen

        # SIGKILL a gateway: the other serves; restart brings it back on its port, new pid.
        old = cluster.pid("api-gateway", 1)
        cluster.kill("api-gateway", 1, signal.SIGKILL)
        async with httpx.AsyncClient(timeout=5) as http:
            assert (await http.get(f"{cluster.gateway_urls[1]}/api/health")).status_code == 200
            process = await cluster.restart("api-gateway", 1)
            assert process.pid != old
            pids.append(process.pid)
            assert (await http.get(f"{cluster.gateway_urls[0]}/api/health")).status_code == 200

        # A NATS node crashes and comes back; every replica answers again.
        node = cluster.nats_node(2)
        await cluster.stop_nats_node(2, signal.SIGKILL)
        assert not node.running
        await cluster.start_nats_node(2)
        assert node.running
        await cluster.wait_ready(30)
        nats_pids = [n.process.pid for n in cluster.nats.nodes if n.process] if cluster.nats else []
        pids += nats_pids
    finally:
        await cluster.stop()
    assert [pid for pid in pids if alive(pid)] == []
