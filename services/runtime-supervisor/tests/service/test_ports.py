"""Ports over the bus (DECISIONS 8; cases 55, 56): a fixed port held by another workspace's service
is refused naming that workspace; one held by a foreign process is refused naming its pid; 50
concurrent automatic-port starts get 50 different ports, each bound by its own service."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from bus_world import Sup, Upstream, http_service, runtime

from contracts.workspace_config import PortSpec, TcpReadiness
from runtime_supervisor.adapters.process.ports import port_holder

pytestmark = pytest.mark.integration

LISTENER = (
    'exec python3 -c "import os,socket,time; s=socket.socket(); '
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
    "s.bind(('127.0.0.1', int(os.environ['PORT']))); s.listen(); time.sleep(300)\""
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_a_fixed_port_held_by_another_workspace_is_refused_naming_it(
    start_supervisor: Any, upstream: Upstream, sup: Sup, tmp_path: Path
) -> None:
    await start_supervisor()
    port = free_port()
    fixed = http_service(port=port)
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    pw = await upstream.project_workspace(str(first_dir), runtime(fixed))
    first = await upstream.workspace(str(first_dir), pw=pw)
    second = await upstream.workspace(str(second_dir), pw=pw)
    await sup.known(first)
    await sup.known(second)
    (row,) = (await sup.ok_control("start", first))["runtimeServices"]
    assert row["port"] == port

    refused = await sup.error("start", second)

    assert (refused.code, refused.status) == ("port_conflict", 409)
    assert f"execution workspace {first} (service web)" in refused.message
    assert refused.details["port"] == port
    assert [r.status for r in (await sup.state(second)).runtime_services] == []
    # Once the first stops, the port is free for the second.
    await sup.ok_control("stop", first)
    (again,) = (await sup.ok_control("start", second))["runtimeServices"]
    assert (again["port"], again["status"]) == (port, "running")


async def test_a_fixed_port_held_by_a_foreign_process_is_refused_naming_its_pid(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        pw = await upstream.project_workspace(str(workdir), runtime(http_service(port=port)))
        ws = await upstream.workspace(str(workdir), pw=pw)
        await sup.known(ws)

        refused = await sup.error("start", ws)

    assert refused.code == "port_conflict"
    assert refused.message.startswith(f"cross-workspace port conflict: port {port} is held by "
                                      f"pid {os.getpid()}")  # fmt: skip
    assert refused.details["ownerPid"] == os.getpid()


async def test_fifty_concurrent_automatic_port_starts_never_collide(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path, home: Path
) -> None:
    await start_supervisor()
    services = [
        http_service(f"svc{i}", command=LISTENER, port=PortSpec(type="auto"),
                     readiness=TcpReadiness(timeout_sec=30))
        for i in range(50)
    ]  # fmt: skip
    pw = await upstream.project_workspace(str(workdir), runtime(*services))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)

    answers = await asyncio.gather(*(sup.ok_control("start", ws, service_index=i)
                                     for i in range(50)))  # fmt: skip

    state = await sup.state(ws)
    rows = [r for r in state.runtime_services if r.status == "running"]
    assert len(rows) == 50
    ports = {r.port for r in rows}
    assert len(ports) == 50
    for row in rows:
        assert row.port is not None
        holder = port_holder(row.port)
        assert holder is not None, (row.service_name, row.port)
        # On the host the port is held by the service's relay into its network namespace.
        relay = json.loads((home / "runtime" / row.id / "relay.json").read_text())
        assert (holder[0], relay["port"]) == (relay["pid"], row.port), (row.service_name, holder)
    assert all(a["operation"]["status"] == "succeeded" for a in answers)
    assert state.desired_state == "running"


def _two_taken_ports() -> tuple[int, list[socket.socket]]:
    """Two neighbouring loopback ports, each held by a listening socket of this test."""
    for _ in range(50):
        low = free_port()
        held: list[socket.socket] = []
        try:
            for port in (low, low + 1):
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
                sock.listen()
        except OSError:
            for sock in held:
                sock.close()
            continue
        return low, held
    raise AssertionError("no two neighbouring free ports")


async def test_case_55_no_free_port_left_in_the_range_is_409(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    low, held = _two_taken_ports()
    try:
        await start_supervisor(CLIPYARD_PORT_RANGE=f"{low}-{low + 1}")
        pw = await upstream.project_workspace(str(workdir), runtime(http_service()))
        ws = await upstream.workspace(str(workdir), pw=pw)
        await sup.known(ws)

        refused = await sup.error("start", ws)

        assert (refused.code, refused.status) == (
            "workspace_runtime_port_allocation_exhausted",
            409,
        )
        assert (await sup.state(ws)).runtime_services == []  # nothing recorded, nothing spawned
    finally:
        for sock in held:
            sock.close()
