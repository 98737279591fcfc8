"""Starting and stopping a real service over the bus: ``python3 -m http.server`` with an auto port
and http readiness runs, answers on its URL, shows in the runtime state with its pid and port,
writes its log, and stops with its port released; killed from outside with SIGKILL it is
recorded ``failed`` with signal 9 (DECISIONS 8); a service that exits before readiness fails the
start with its last output (case 57)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from bus_world import Sup, Upstream, eventually, http_service, runtime

from contracts.base import ErrorReply, Ok
from contracts.workspace_config import (
    ExecutionWorkspaceConfig,
    HttpReadiness,
    LogReadiness,
    PortSpec,
)
from runtime_supervisor.adapters.process import proc_start_time

pytestmark = pytest.mark.integration


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


async def get(url: str) -> httpx.Response | None:
    async with httpx.AsyncClient(timeout=5, trust_env=False) as http:
        try:
            return await http.get(url)
        except httpx.TransportError:
            return None


async def workspace_with(upstream: Upstream, sup: Sup, cwd: Path, *services: Any) -> str:
    pw = await upstream.project_workspace(str(cwd), runtime(*services))
    ws = await upstream.workspace(str(cwd), pw=pw)
    await sup.known(ws)
    return ws


async def test_http_server_starts_answers_stops_and_frees_its_port(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    (workdir / "hello.txt").write_text("hello from the worktree\n")
    ws = await workspace_with(upstream, sup, workdir, http_service())

    result = await sup.ok_control("start", ws, workspace_command_id="service:web")

    assert result["operation"]["status"] == "succeeded"
    assert result["operation"]["phase"] == "workspace_provision"
    (row,) = result["runtimeServices"]
    assert (row["status"], row["healthStatus"], row["desiredState"]) == ("running", "healthy",
                                                                         "running")  # fmt: skip
    port, pid = row["port"], row["pid"]
    assert 43000 <= port <= 43999
    assert row["url"] == f"http://127.0.0.1:{port}"
    assert row["cwd"] == str(workdir)
    # The process is real, answers on its URL from the workspace's directory, and holds the port.
    assert proc_start_time(pid) is not None
    answer = await get(f"{row['url']}/hello.txt")
    assert answer is not None
    assert answer.text == "hello from the worktree\n"
    assert not port_free(port)
    state = await sup.state(ws, probe=True)
    assert [r.status for r in state.runtime_services] == ["running"]
    assert state.runtime_services[0].health_status == "healthy"
    log = await sup.log(ws, row["id"], tail=5)
    assert isinstance(log, Ok)
    assert "GET /hello.txt" in log.result["text"]

    stopped = await sup.ok_control("stop", ws, workspace_command_id="service:web")

    assert stopped["operation"]["phase"] == "workspace_teardown"
    (after,) = stopped["runtimeServices"]
    assert (after["id"], after["status"], after["desiredState"]) == (row["id"], "stopped",
                                                                     "stopped")  # fmt: skip
    assert proc_start_time(pid) is None
    assert port_free(port)
    assert await get(row["url"]) is None


async def test_sigkill_from_outside_is_recorded_failed_with_its_signal(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    ws = await workspace_with(upstream, sup, workdir, http_service())
    result = await sup.ok_control("start", ws)
    (row,) = result["runtimeServices"]

    os.kill(row["pid"], signal.SIGKILL)

    failed = await sup.wait_status(ws, row["id"], "failed")
    assert failed.exit_signal == 9
    assert failed.exit_code is None
    assert failed.health_status == "unhealthy"
    assert "signal 9" in (failed.last_error or "")
    assert "Serving HTTP" in (failed.last_output or "")
    await eventually(lambda: _true(port_free(row["port"])), 5, "the port freed")


async def _true(value: bool) -> bool:
    return value


async def test_a_service_exiting_before_readiness_fails_its_start_with_its_output(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    crashing = http_service("api", command="echo 'cannot bind: config missing' >&2; exit 3")
    ws = await workspace_with(upstream, sup, workdir, crashing)

    reply = await sup.control("start", ws)

    assert isinstance(reply, ErrorReply)
    assert reply.code == "runtime_service_start_failed"
    assert reply.message.startswith('Failed to start runtime service "api": service process '
                                    "exited before readiness (exit 3)")  # fmt: skip
    assert "cannot bind: config missing" in reply.message
    state = await sup.state(ws)
    (row,) = state.runtime_services
    assert (row.status, row.exit_code, row.health_status) == ("failed", 3, "unhealthy")
    assert "cannot bind: config missing" in (row.last_output or "")
    # A failed start leaves the desired state stopped (reference §4.2 step 11).
    assert state.service_states == {"0": "stopped"}


async def test_a_readiness_timeout_stops_the_whole_group(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    silent = http_service(
        "slow", command="sleep 300 & sleep 300",
        readiness=HttpReadiness(url_template="http://127.0.0.1:{{port}}/", timeout_sec=1),
    )  # fmt: skip
    ws = await workspace_with(upstream, sup, workdir, silent)

    reply = await sup.control("start", ws)

    assert isinstance(reply, ErrorReply), reply
    assert "not ready after 1s" in reply.message
    (row,) = (await sup.state(ws)).runtime_services
    assert row.status == "failed"
    # Nothing of its group survives (both sleeps included).
    assert row.pid is not None
    assert proc_start_time(row.pid) is None


async def test_own_config_overrides_the_project_workspaces_and_env_templates_render(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    pw = await upstream.project_workspace(str(workdir), runtime(http_service("inherited")))
    issue = await upstream.issue("ACME-7")
    own = runtime(
        http_service(
            "echo", command='echo "issue=$ISSUE_KEY port=$APP_PORT host=$HOST"; exec sleep 300',
            port=PortSpec(type="auto", env_key="APP_PORT"), readiness=None,
            env={"ISSUE_KEY": "{{issue.identifier}}"},
        )
    )  # fmt: skip
    ws = await upstream.workspace(
        str(workdir), pw=pw, issue=issue, config=ExecutionWorkspaceConfig(workspace_runtime=own)
    )
    await sup.known(ws)

    result = await sup.ok_control("start", ws)

    (row,) = result["runtimeServices"]
    assert row["serviceName"] == "echo"

    async def logged() -> str | None:
        log = await sup.log(ws, row["id"])
        text = log.result["text"] if isinstance(log, Ok) else ""
        return text if "issue=" in text else None

    text = await eventually(logged, 5, "the service's output")
    assert f"issue=ACME-7 port={row['port']} host=127.0.0.1" in text
    await sup.ok_control("stop", ws)
    assert proc_start_time(row["pid"]) is None


async def test_concurrent_starts_of_one_service_spawn_it_once(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    ws = await workspace_with(upstream, sup, workdir, http_service())

    answers = await asyncio.gather(*(sup.ok_control("start", ws) for _ in range(4)))

    ids = {row["id"] for answer in answers for row in answer["runtimeServices"]}
    assert len(ids) == 1
    outputs = [answer["operation"]["id"] for answer in answers]
    assert len(set(outputs)) == 4
    state = await sup.state(ws)
    assert [r.status for r in state.runtime_services] == ["running"]


async def test_the_log_reads_by_byte_range_and_refuses_a_range_past_its_end(
    start_supervisor: Any, upstream: Upstream, sup: Sup, workdir: Path
) -> None:
    await start_supervisor()
    printer = http_service(
        "printer", command="printf 'line-1\\nline-2\\nline-3\\n'; exec sleep 300", port=None,
        readiness=LogReadiness(pattern="line-3"),
    )  # fmt: skip
    ws = await workspace_with(upstream, sup, workdir, printer)
    (row,) = (await sup.ok_control("start", ws))["runtimeServices"]

    ranged = await sup.log(ws, row["id"], offset=7, length=6)
    tail = await sup.log(ws, row["id"], tail=1)
    whole = await sup.log(ws, row["id"])
    past = await sup.log(ws, row["id"], offset=10_000, length=10)
    unknown = await sup.log(ws, "5b0c2a8e-0000-4000-8000-000000000000")

    assert isinstance(ranged, Ok)
    assert (ranged.result["text"], ranged.result["offset"], ranged.result["size"]) == (
        "line-2",
        7,
        21,
    )
    assert isinstance(tail, Ok)
    assert tail.result["text"] == "line-3\n"
    assert isinstance(whole, Ok)
    assert whole.result["text"] == "line-1\nline-2\nline-3\n"
    assert isinstance(past, ErrorReply)
    assert past.status == 422
    assert isinstance(unknown, ErrorReply)
    assert unknown.status == 404
