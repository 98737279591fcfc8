"""Egress (docs/design/isolation.md): a workspace's processes reach outside their namespace only
the hosts and ports of their project's allowlist (and, while its run holds the workspace, of the
agent's); names resolve only when a rule names them; the host's own addresses stay out of reach
whatever a rule says; and each distinct (host, port, verdict) of a period is an event on the
workspace's audit trail, with its count."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bus_world import BOARD, Sup, Upstream, eventually, runtime

from contracts.execution_commands import GetWorkspaceEvents, GetWorkspaceOperation
from contracts.execution_views import WorkspaceEventRow, WorkspaceOperationDetail
from contracts.workspace_config import EgressRule, JobSpec
from contracts.workspace_subjects import workspace_events, workspace_operation
from contracts.workspace_views import Page
from testkit.pong import pong_server

pytestmark = pytest.mark.integration

REACH = r"""
import json, socket, struct, sys
found = {}
def exchange(host, port):
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.sendall(b"ping")
            return s.recv(16).decode() or "closed"
    except Exception as exc:
        return type(exc).__name__
def resolve(name):
    query = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack("!HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(query, ("192.0.2.53", 53))  # any resolver address: the gate answers
    answer = s.recv(512)
    return {"rcode": answer[3] & 15, "answers": struct.unpack("!H", answer[6:8])[0]}
for spec in sys.argv[1:]:
    host, port = spec.rsplit(":", 1)
    found[spec] = exchange(host, int(port))
found["dns:localhost"] = resolve("localhost")
found["dns:example.com"] = resolve("example.com")
print(json.dumps(found))
"""


@pytest.fixture
def allowed_host() -> Iterator[int]:
    """The allowlisted test host standing for the internet."""
    with pong_server("127.0.8.1") as port:
        yield port


@pytest.fixture
def other_host() -> Iterator[int]:
    """A host of the same test network that no rule names."""
    with pong_server("127.0.8.2") as port:
        yield port


@pytest.fixture
def host_loopback() -> Iterator[int]:
    """A server on the host's own loopback (outside the network the operator opened)."""
    with pong_server("127.0.0.3") as port:
        yield port


async def _reach(sup: Sup, ws: str, *targets: str) -> dict[str, Any]:
    ran = await sup.ok_control("run", ws, workspace_command_id="job:reach")
    detail = await sup.bus.call(
        workspace_operation("supervisor"),
        GetWorkspaceOperation(principal=BOARD, operation_id=ran["operation"]["id"]),
        WorkspaceOperationDetail,
    )
    lines = (detail.stdout_excerpt or "").strip().splitlines()
    assert lines, detail.stderr_excerpt
    found: dict[str, Any] = json.loads(lines[-1])
    return found


async def _egress(sup: Sup, ws: str) -> list[WorkspaceEventRow]:
    page = await sup.bus.call(
        workspace_events("supervisor"),
        GetWorkspaceEvents(principal=BOARD, workspace_id=ws, limit=500),
        Page[WorkspaceEventRow],
    )
    return [row for row in page.items if row.type.startswith("egress.")]


async def test_a_workspace_reaches_its_allowlist_only_and_each_verdict_is_an_event(
    start_supervisor: Any, upstream: Upstream, sup: Sup, tmp_path: Path,
    allowed_host: int, other_host: int, host_loopback: int,
) -> None:  # fmt: skip
    await start_supervisor()
    # The allowlist names the test host's port, the whole other test host, and the host's own
    # loopback (which no allowlist opens: the operator did not).
    await upstream.project([
        EgressRule(host="127.0.8.1", port=allowed_host), EgressRule(host="127.0.0.3"),
        EgressRule(host="localhost"),
    ])  # fmt: skip
    targets = [f"127.0.8.1:{allowed_host}", f"127.0.8.1:{allowed_host + 1}",
               f"127.0.8.2:{other_host}", f"127.0.0.3:{host_loopback}"]  # fmt: skip
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / "reach.py").write_text(REACH)
    jobs = [JobSpec(name="reach", command="python3 reach.py " + " ".join(targets))]
    pw = await upstream.project_workspace(str(wt), runtime(jobs=jobs))
    ws = await upstream.workspace(str(wt), pw=pw)
    await sup.known(ws)

    found = await _reach(sup, ws)
    assert found[targets[0]] == "pong", found  # allowlisted: reached from the host's network
    assert found[targets[1]] == "ConnectionResetError", found  # another port of it
    assert found[targets[2]] == "ConnectionResetError", found  # another host
    assert found[targets[3]] == "ConnectionResetError", found  # the host's own, rule or not
    assert found["dns:localhost"] == {"rcode": 0, "answers": 1}, found  # a rule names it
    assert found["dns:example.com"] == {"rcode": 5, "answers": 0}, found  # refused

    async def observed() -> dict[tuple[str, int, str], WorkspaceEventRow] | None:
        rows = {(r.data["host"], r.data["port"], r.data["verdict"]): r
                for r in await _egress(sup, ws)}  # fmt: skip
        return rows if len(rows) >= 6 else None

    rows = await eventually(observed, what="the egress events")
    assert set(rows) == {
        ("127.0.8.1", allowed_host, "allowed"),
        ("127.0.8.1", allowed_host + 1, "denied"),
        ("127.0.8.2", other_host, "denied"),
        ("127.0.0.3", host_loopback, "denied"),
        ("localhost", 53, "allowed"),
        ("example.com", 53, "denied"),
    }, rows
    first = rows[("127.0.8.1", allowed_host, "allowed")]
    assert first.type == "egress.observed.v1", first
    assert first.data["count"] == 1, first
    assert first.actor is not None, first
    assert first.actor.type == "system", first
    assert "egress gate" in (first.reason or ""), first

    # The allowlist changes while the namespace lives: the next connection follows it.
    await upstream.project([], created=False)

    async def closed() -> dict[str, Any] | None:
        again = await _reach(sup, ws)
        return again if again[targets[0]] == "ConnectionResetError" else None

    await eventually(closed, what="the emptied allowlist")

    async def denied_now() -> bool:
        rows = await _egress(sup, ws)
        return ("127.0.8.1", allowed_host, "denied") in {
            (r.data["host"], r.data["port"], r.data["verdict"]) for r in rows
        }

    await eventually(denied_now, what="the denial of the host allowed before")


async def test_a_gate_that_died_with_its_supervisor_is_started_again_by_the_next(
    start_supervisor: Any, upstream: Upstream, sup: Sup, tmp_path: Path, home: Path,
    allowed_host: int,
) -> None:  # fmt: skip
    supervisor = await start_supervisor()
    await upstream.project([EgressRule(host="127.0.8.1", port=allowed_host)])
    target = f"127.0.8.1:{allowed_host}"
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / "reach.py").write_text(REACH)
    pw = await upstream.project_workspace(str(wt), runtime(jobs=[
        JobSpec(name="reach", command=f"python3 reach.py {target}")]))  # fmt: skip
    ws = await upstream.workspace(str(wt), pw=pw)
    await sup.known(ws)
    assert (await _reach(sup, ws))[target] == "pong"
    (gate_file,) = (home / "netns").glob("*/gate.json")
    gate = json.loads(gate_file.read_text())["pid"]

    supervisor.kill()
    os.kill(gate, signal.SIGKILL)
    await supervisor.start()

    async def revived() -> int | None:
        pid = json.loads(gate_file.read_text())["pid"]
        return pid if pid != gate and Path(f"/proc/{pid}").exists() else None

    await eventually(revived, what="a new gate")
    # Straight into the namespace (no launch, which would start a gate too): out again.
    probe = (f"import socket\nwith socket.create_connection(('127.0.8.1', {allowed_host}), "
             "timeout=3) as s:\n    s.sendall(b'ping'); print(s.recv(8).decode())")  # fmt: skip
    done = subprocess.run(["nsenter", f"--net=/run/netns/{gate_file.parent.name}", "--",
                           sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=30, check=False)  # fmt: skip
    assert done.stdout.strip() == "pong", done.stderr
