"""The escape suite (docs/design/isolation.md): as company B, a job, a service and a realizer
command each try to read A's worktree and Clipyard's home, to write outside their worktree, to
reach NATS, PostgreSQL, A's running dev server and a server standing for the internet, and to signal A's
processes or the supervisor. Every attempt fails and A is unchanged; meanwhile B's dev server (a
shared service: it runs in its project workspace's namespace) answers on its preview URL from the
host and, forwarded into the workspace's namespace, from B's own job; and B's limits end what
exceeds them with a reason naming the limit."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bus_world import BOARD, Sup, Upstream, http_service, runtime

from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.contained_commands import (
    ContainedCommandResult,
    RunContainedCommand,
    contained_run,
)
from contracts.execution_commands import GetWorkspaceOperation
from contracts.execution_views import WorkspaceOperationDetail
from contracts.gateway import CompanyHostAccessChanged
from contracts.workspace_config import JobSpec, LogReadiness, ResourceLimits, ServiceSpec
from contracts.workspace_subjects import workspace_operation

pytestmark = pytest.mark.integration

B = "c-bravo"
B_BOARD = Principal(company_id=B, actor=Actor(type="board", id="board-b"))
REALIZER = Principal(company_id=B, actor=Actor(type="system", id="workspace-realizer"))
GATEWAY = Actor(type="system", id="api-gateway")

ATTEMPTS = r"""
import json, os, socket, sys
targets = json.loads(sys.argv[1])
found = {"uid": os.getuid(), "whoami": os.popen("whoami").read().strip()}
def attempt(name, action):
    try:
        action()
        found[name] = "succeeded"
    except Exception as exc:
        found[name] = type(exc).__name__
def read(path):
    with open(path, "rb") as f:
        f.read(1)
def write(path):
    with open(path, "w") as f:
        f.write("pwned")
def connect(port, host="127.0.0.1"):
    # An exchange, not only a connect: the egress gate accepts a connection leaving the
    # namespace before it resets a denied one.
    with socket.create_connection((host, port), timeout=2) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        s.recv(1)
attempt("read_a_worktree", lambda: read(targets["a_file"]))
attempt("write_a_worktree", lambda: write(targets["a_file"]))
attempt("list_home", lambda: os.listdir(targets["home"]))
for name in ("mk", "vault", "store", "a_log"):
    attempt("read_" + name, lambda p=targets[name]: read(p))
attempt("write_outside", lambda: write(targets["outside"]))
attempt("nats", lambda: connect(targets["nats"]))
attempt("postgres", lambda: connect(targets["postgres"]))
attempt("a_dev_server", lambda: connect(targets["a_port"]))
attempt("internet", lambda: connect(targets["internet_port"], targets["internet_host"]))
attempt("signal_supervisor", lambda: os.kill(targets["supervisor"], 0))
attempt("signal_a_service", lambda: os.kill(targets["a_pid"], 0))
if os.path.exists("own_port"):
    attempt("own_dev_server", lambda: connect(int(open("own_port").read())))
print(json.dumps(found))
"""
ESCAPES = ("read_a_worktree", "write_a_worktree", "list_home", "read_mk", "read_vault",
           "read_store", "read_a_log", "write_outside", "nats", "postgres", "a_dev_server", "internet",
           "signal_supervisor", "signal_a_service")  # fmt: skip


@pytest.fixture
def internet() -> Iterator[tuple[str, int]]:
    """A server standing for the internet, on another loopback address."""
    server = socket.socket()
    server.bind(("127.0.0.2", 0))
    server.listen(16)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield "127.0.0.2", server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def _home_files(home: Path) -> dict[str, str]:
    (home / "credentials").mkdir(exist_ok=True)
    files = {"mk": home / "credentials" / "master.key",
             "vault": home / "credentials" / "vault.db"}  # fmt: skip
    for path in files.values():
        path.write_text("top secret")
    stores = sorted(home.glob("**/*.sqlite*")) or sorted(home.glob("**/*.db"))
    return {**{k: str(v) for k, v in files.items()}, "store": str(stores[0])}


async def _output(sup: Sup, operation: dict[str, Any]) -> dict[str, Any]:
    detail = await sup.bus.call(
        workspace_operation("supervisor"),
        GetWorkspaceOperation(principal=B_BOARD, operation_id=operation["id"]),
        WorkspaceOperationDetail,
    )
    lines = (detail.stdout_excerpt or "").strip().splitlines()
    assert lines, (operation, detail.stderr_excerpt)
    found: dict[str, Any] = json.loads(lines[-1])
    return found


def _assert_contained(found: dict[str, Any]) -> None:
    assert found["uid"] >= 1_200_000, found
    assert found["whoami"] == "clipyard", found
    # Each attempt failed with an error (a scrubbed "***" would hide a success: none may be one).
    escaped = [name for name in ESCAPES if not str(found[name]).endswith("Error")]
    assert escaped == [], found


async def test_company_b_reaches_nothing_of_a_nor_of_clipyard(
    start_supervisor: Any, upstream: Upstream, sup: Sup, home: Path, tmp_path: Path,
    own_nats: Any, internet: tuple[str, int], postgres: Any,
) -> None:  # fmt: skip
    supervisor = await start_supervisor()
    # A: a worktree with a secret and a running dev server.
    a_wt = tmp_path / "a-worktree"
    a_wt.mkdir()
    (a_wt / "secret.txt").write_text("A's code")
    a_pw = await upstream.project_workspace(str(a_wt), runtime(http_service("web")))
    a_ws = await upstream.workspace(str(a_wt), pw=a_pw)
    await sup.known(a_ws)
    (a_row,) = (await sup.ok_control("start", a_ws))["runtimeServices"]
    with urllib.request.urlopen(f"http://127.0.0.1:{a_row['port']}/secret.txt") as answer:
        assert answer.read() == b"A's code"  # A's preview URL works from the host
    # B: a worktree holding the attempts, a dev server, a job and tight limits.
    b_wt = tmp_path / "b-worktree"
    b_wt.mkdir()
    (b_wt / "attempts.py").write_text(ATTEMPTS)
    (b_wt / "index.html").write_text("B's page")
    targets = {
        "a_file": str(a_wt / "secret.txt"), "home": str(home),
        "a_log": str(home / "runtime" / a_row["id"] / "output.log"),
        "outside": str(tmp_path / "planted.txt"), "nats": own_nats.port,
        "postgres": postgres.port,
        "a_port": a_row["port"], "internet_host": internet[0], "internet_port": internet[1],
        "supervisor": supervisor.pid, "a_pid": a_row["pid"], **_home_files(home),
    }  # fmt: skip
    bravo = dataclasses.replace(upstream, company=B)
    jobs = [
        JobSpec(name="escape", command=f"python3 attempts.py '{json.dumps(targets)}'"),
        JobSpec(name="hog", command="python3 -c 'x = bytearray(400 << 20)'",
                limits=ResourceLimits(memory_mb=64)),
        JobSpec(name="forker",
                command="python3 -c 'import os\nfor _ in range(64): os.fork() or os._exit(0)'",
                limits=ResourceLimits(processes=8)),
    ]  # fmt: skip
    prober = ServiceSpec(
        name="prober",
        port=None,
        readiness=LogReadiness(pattern='"uid"'),
        command=f"python3 attempts.py '{json.dumps(targets)}'; exec sleep 300",
    )
    b_pw = await bravo.project_workspace(str(b_wt), runtime(http_service("web"), prober,
                                                            jobs=jobs))  # fmt: skip
    b_ws = await bravo.workspace(str(b_wt), pw=b_pw)
    await sup.known(b_ws, principal=B_BOARD)
    started = (await sup.ok_control("start", b_ws, principal=B_BOARD))["runtimeServices"]
    b_row, probe_row = sorted(started, key=lambda row: row["serviceName"] != "web")
    with urllib.request.urlopen(f"http://127.0.0.1:{b_row['port']}/index.html") as answer:
        assert answer.read() == b"B's page"  # B's preview URL works from the host
    (b_wt / "own_port").write_text(str(b_row["port"]))

    # The same attempts from a service (its log).
    logged = (home / "runtime" / probe_row["id"] / "output.log").read_text().splitlines()
    _assert_contained(json.loads(next(line for line in logged if '"uid"' in line)))

    ran = await sup.ok_control("run", b_ws, principal=B_BOARD, workspace_command_id="job:escape")
    found = await _output(sup, ran["operation"])
    _assert_contained(found)
    assert found["own_dev_server"] == "succeeded", found  # its own namespace's loopback

    # The same attempts from a contained realizer command (a provision command of B's).
    reply = await sup.request(contained_run("local"), RunContainedCommand(
        principal=REALIZER, company_id=B, command=f"python3 attempts.py '{json.dumps(targets)}'",
        cwd=str(b_wt), root=str(b_wt), owned=True, label="provision"), timeout=60.0)  # fmt: skip
    assert isinstance(reply, Ok), reply
    result = msgspec.convert(reply.result, ContainedCommandResult)
    assert result.exit_code == 0, result.stderr
    _assert_contained(json.loads(result.stdout.decode().strip().splitlines()[-1]))
    # Only Clipyard itself may ask for one.
    refused = await sup.request(contained_run("local"), RunContainedCommand(
        principal=B_BOARD, company_id=B, command="true", cwd=str(b_wt), root=str(b_wt)))  # fmt: skip
    assert isinstance(refused, ErrorReply), refused
    assert refused.code == "forbidden", refused

    # Limits end what exceeds them, naming the limit.
    hog = (await sup.ok_control("run", b_ws, principal=B_BOARD,
                                workspace_command_id="job:hog"))["operation"]  # fmt: skip
    assert hog["status"] == "failed", hog
    assert "memory limit" in hog["metadata"]["outcome"], hog
    forker = (await sup.ok_control("run", b_ws, principal=B_BOARD,
                                   workspace_command_id="job:forker"))["operation"]  # fmt: skip
    assert forker["status"] == "failed", forker
    assert "process limit" in forker["metadata"]["outcome"], forker

    # A is unchanged and still serving.
    assert (a_wt / "secret.txt").read_text() == "A's code"
    assert not (tmp_path / "planted.txt").exists()
    with urllib.request.urlopen(f"http://127.0.0.1:{a_row['port']}/secret.txt") as answer:
        assert answer.read() == b"A's code"
    state = await sup.state(a_ws)
    assert [r.status for r in state.runtime_services] == ["running"]


async def test_a_host_trusted_companys_commands_run_unconfined_until_the_admin_takes_it_back(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    jobs = [JobSpec(name="who", command="id -u; ls / | wc -l")]
    pw = await upstream.project_workspace(str(workdir), runtime(jobs=jobs))
    ws = await upstream.workspace(str(workdir), pw=pw)
    await sup.known(ws)

    async def who() -> list[str]:
        ran = await sup.ok_control("run", ws, workspace_command_id="job:who")
        detail = await sup.bus.call(
            workspace_operation("supervisor"),
            GetWorkspaceOperation(principal=BOARD, operation_id=ran["operation"]["id"]),
            WorkspaceOperationDetail,
        )
        return (detail.stdout_excerpt or "").split()

    contained = await who()
    assert int(contained[0]) >= 1_200_000, contained
    for trusted in (True, False):
        await upstream.publish(CompanyHostAccessChanged(
            **upstream.envelope("company", upstream.company, GATEWAY), host_trusted=trusted,
            allowed_roots=[]), "gateway")  # fmt: skip
        deadline = asyncio.get_running_loop().time() + 15
        while ((await who())[0] == "0") != trusted:
            assert asyncio.get_running_loop().time() < deadline, f"hostTrusted={trusted} unseen"
            await asyncio.sleep(0.1)
        seen = await who()
        # Unconfined: root, and the host's whole filesystem; contained again: its identity.
        assert (seen[0] == "0") is trusted, seen


async def test_no_folder_inside_a_companys_folder_and_no_checkouts_git_dir_is_handed_over(
    start_supervisor: Any, upstream: Upstream, sup: Sup, home: Path
) -> None:
    await start_supervisor()
    # A managed checkout (under the home) with its git dir, shared by a workspace.
    checkout = home / "checkouts" / "web"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text("[core]\n")
    jobs = [JobSpec(name="tamper", command="echo '[core] sshCommand=evil' >> .git/config; "
                                           "touch built.txt")]  # fmt: skip
    pw = await upstream.project_workspace(str(checkout), runtime(jobs=jobs))
    ws = await upstream.workspace(str(checkout), pw=pw, mode="shared_workspace")
    await sup.known(ws)
    ran = (await sup.ok_control("run", ws, workspace_command_id="job:tamper"))["operation"]
    assert ran["status"] == "succeeded", ran  # the working tree is the company's ...
    assert (checkout / "built.txt").stat().st_uid >= 1_200_000
    assert (checkout / ".git" / "config").read_text() == "[core]\n"  # ... its git dir is not
    assert (checkout / ".git").stat().st_uid == 0
    # A workspace inside another one's folder (a link planted there could lead root anywhere).
    nested = checkout / "nested"
    nested.mkdir()
    os.chown(nested, 1_200_123, 1_200_123)
    inner = nested / "inner"
    inner.mkdir()
    ws2 = await upstream.workspace(str(inner), pw=pw, ws=None)
    await sup.known(ws2)
    refused = (await sup.ok_control("run", ws2, workspace_command_id="job:tamper"))["operation"]
    assert refused["status"] == "failed", refused
    assert "a company's processes own" in refused["metadata"]["outcome"], refused
