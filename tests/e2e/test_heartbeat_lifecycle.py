"""Runs that do not end by themselves, and a controller that dies during one.

A run over its timeout ends ``timed_out`` and a cancelled one ``cancelled``; either way the
adapter's whole process group is gone: the agent ignores SIGTERM and starts a child that ignores
it too (the kill must escalate to SIGKILL), and with ``AGENT_ESCAPE`` a grandchild in a session of
its own (an untrusted adapter lives in its own pid namespace, which dies with it). The host is
read in ``/proc``: the group of ``slot.adapter_started.v1``'s ``pgid``, and every process whose
environment names the run. The slot is free again (``tools/runtime-health``).

A controller SIGKILLed while runs are running, and restarted, leaves none ``running``: a run
whose adapter ended while it was down, and one still running at the restart, both end
(``succeeded``, or ``failed`` with ``process_detached``).

The run log is served in byte ranges that put the whole log back together.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.heartbeatutil import (
    brief as _brief,
)
from tests.e2e.heartbeatutil import (
    create_agent,
    read_events,
    run_processes,
    wait_log,
    wait_run,
    wake,
)
from tests.e2e.hostfacts import alive, group_members, wait_until
from tests.e2e.runtimeutil import Board, runtime_board, status_of

pytestmark = pytest.mark.e2e


async def _adapter_group(board: Board, run_id: str) -> int:
    """The adapter's process group, as ``slot.adapter_started.v1`` gives it."""
    events = await read_events(
        board.http,
        board.company["id"],
        lambda es: any(e.get("runId") == run_id for e in es),
        types=("slot.adapter_started.v1",),
    )
    (started,) = [e for e in events if e.get("runId") == run_id]
    pgid = started["pgid"]
    assert isinstance(pgid, int), started
    assert pgid > 1, started
    return pgid


async def _health(http: httpx.AsyncClient, company_id: str) -> dict[str, dict[str, Any]]:
    answer = await http.get(f"/api/companies/{company_id}/tools/runtime-health")
    assert answer.status_code == 200, status_of(answer)
    return {row["type"]: row for row in answer.json()}


async def _stubborn_running(board: Board, **env: str) -> tuple[str, int, list[int]]:
    """Wake a stubborn agent (no issue); once it runs: ``(runId, pgid, its processes)``."""
    agent = await create_agent(board, "stubborn", agent_env=env)
    run_id = (await wake(board.http, agent["id"]))["runId"]
    await wait_log(board.http, run_id, "stubborn started")
    pgid = await _adapter_group(board, run_id)
    assert group_members(pgid), f"no process in the adapter's group {pgid}"
    expected = 3 if env.get("AGENT_ESCAPE") == "1" else 2
    pids = await wait_until(
        lambda: (found := run_processes(run_id)) and len(found) >= expected and found,
        10,
        f"the agent and its {expected - 1} children",
    )
    return run_id, pgid, list(pids)


def _assert_all_gone(run_id: str, pgid: int, pids: list[int]) -> None:
    assert group_members(pgid) == [], f"left in the adapter's group: {group_members(pgid)}"
    survivors = [pid for pid in pids if alive(pid)]
    assert survivors == [], f"processes of run {run_id} survived: {survivors}"
    assert run_processes(run_id) == [], run_processes(run_id)


@pytest.mark.parametrize("escape", [False, True], ids=["group", "setsid-grandchild"])
async def test_run_over_its_timeout_ends_timed_out_with_its_processes_gone(
    stack: Any, tmp_path: Path, escape: bool
) -> None:
    async with runtime_board(stack, tmp_path) as board:
        env = {"AGENT_ESCAPE": "1"} if escape else {}
        agent_env = {"AGENT_SLEEP": "120", **env}
        agent = await create_agent(board, "stubborn", timeout_sec=2, agent_env=agent_env)
        run_id = (await wake(board.http, agent["id"]))["runId"]
        await wait_log(board.http, run_id, "stubborn started")
        pgid = await _adapter_group(board, run_id)
        pids = list(run_processes(run_id))
        assert len(pids) >= (3 if escape else 2), pids
        run = await wait_run(board.http, run_id, timeout=40)
        assert run["status"] == "timed_out", _brief(run)
        assert run["errorCode"] == "timed_out", run
        assert run["stage"] == "cleanup", run
        assert "stubborn started" in (run["stdoutExcerpt"] or ""), run
        _assert_all_gone(run_id, pgid, pids)
        health = await _health(board.http, board.company["id"])
        assert health["local_stdio"]["inUse"] == 0, health


async def test_cancel_ends_the_run_cancelled_with_its_process_group_gone(
    stack: Any, tmp_path: Path
) -> None:
    async with runtime_board(stack, tmp_path) as board:
        company = board.company["id"]
        before = await _health(board.http, company)
        assert before["local_stdio"]["inUse"] == 0, before
        assert before["local_stdio"]["capacity"] == 4, before
        assert before["local_stdio"]["healthy"] is True, before
        assert "remote_http" in before, before
        run_id, pgid, pids = await _stubborn_running(board, AGENT_SLEEP="120")
        during = await _health(board.http, company)
        assert during["local_stdio"]["inUse"] == 1, during
        answer = await board.http.post(f"/api/runs/{run_id}/cancel")
        assert answer.status_code == 202, status_of(answer)
        run = await wait_run(board.http, run_id, timeout=30)
        assert run["status"] == "cancelled", _brief(run)
        assert run["errorCode"] == "cancelled", run
        assert run["stage"] == "cleanup", run
        assert run["cancelRequested"] is True, run
        _assert_all_gone(run_id, pgid, pids)
        after = await _health(board.http, company)
        assert after["local_stdio"]["inUse"] == 0, after
        again = await board.http.post(f"/api/runs/{run_id}/cancel")
        assert again.status_code == 409, status_of(again)
        # A queued run is cancelled at once: the agent's one run at a time is busy.
        busy_id, busy_pgid, busy_pids = await _stubborn_running(board, AGENT_SLEEP="120")
        agent_id = (await board.http.get(f"/api/runs/{busy_id}")).json()["agentId"]
        queued = await wake(board.http, agent_id, reason="behind the busy one")
        assert queued["runId"] != busy_id
        assert (await board.http.post(f"/api/runs/{queued['runId']}/cancel")).status_code == 202
        gone = await wait_run(board.http, queued["runId"], timeout=5)
        assert gone["status"] == "cancelled", _brief(gone)
        assert gone["startedAt"] is None, gone
        assert (await board.http.post(f"/api/runs/{busy_id}/cancel")).status_code == 202
        assert (await wait_run(board.http, busy_id))["status"] == "cancelled"
        _assert_all_gone(busy_id, busy_pgid, busy_pids)


@pytest.mark.both_stores
async def test_controller_killed_during_runs_leaves_none_running_after_restart(
    stack: Any, tmp_path: Path
) -> None:
    controller = stack.processes["heartbeat_controller"]
    async with runtime_board(stack, tmp_path) as board:
        short = await create_agent(board, "sleeper", name="short", AGENT_SLEEP="1")
        long = await create_agent(board, "sleeper", name="long", AGENT_SLEEP="6")
        short_run = (await wake(board.http, short["id"]))["runId"]
        long_run = (await wake(board.http, long["id"]))["runId"]
        for run_id in (short_run, long_run):
            await wait_log(board.http, run_id, "sleeper started")
        controller.kill()
        # The short adapter ends while no controller runs.
        await asyncio.sleep(2.5)
        await controller.restart()
        for run_id in (short_run, long_run):
            run = await wait_run(board.http, run_id, timeout=30)
            assert run["status"] in ("succeeded", "failed"), _brief(run)
            if run["status"] == "failed":
                assert run["errorCode"] == "process_detached", _brief(run)
            assert run["stage"] == "cleanup", run
        running = await board.http.get(
            f"/api/companies/{board.company['id']}/runs", params={"status": "running"}
        )
        assert running.status_code == 200, status_of(running)
        assert running.json() == [], running.json()
        for run_id in (short_run, long_run):
            assert run_processes(run_id) == [], run_id
        health = await _health(board.http, board.company["id"])
        assert health["local_stdio"]["inUse"] == 0, health
        # It still runs new work.
        again = await wait_run(board.http, (await wake(board.http, short["id"]))["runId"])
        assert again["status"] == "succeeded", _brief(again)


async def test_run_log_in_byte_ranges(stack: Any, tmp_path: Path) -> None:
    async with runtime_board(stack, tmp_path) as board:
        agent = await create_agent(board, "logger", AGENT_LINES="400")
        run = await wait_run(board.http, (await wake(board.http, agent["id"]))["runId"])
        assert run["status"] == "succeeded", _brief(run)
        url = f"/api/runs/{run['id']}/log"
        whole = await board.http.get(url)
        assert whole.status_code == 200, status_of(whole)
        assert whole.headers["content-type"].startswith("text/plain"), whole.headers
        assert len(whole.content) == run["logBytes"], (len(whole.content), run["logBytes"])
        # stdout and stderr interleaved (in no exact order: two pipes), the last-line JSON.
        assert "line 0399 of the agent's log" in whole.text
        assert "err 0390" in whole.text
        assert '{"usage": {"inputTokens": 3' in whole.text, whole.text[-300:]
        pieces, offset, size = [], 0, 1000
        while offset < len(whole.content):
            part = await board.http.get(url, params={"offset": offset, "length": size})
            assert part.status_code == 200, status_of(part)
            assert len(part.content) == min(size, len(whole.content) - offset)
            pieces.append(part.content)
            offset += len(part.content)
        assert b"".join(pieces) == whole.content
        middle = await board.http.get(url, params={"offset": 5000, "length": 37})
        assert middle.content == whole.content[5000:5037]
        past = await board.http.get(url, params={"offset": len(whole.content) + 10})
        # Past the end: nothing (an empty 200) or a 422 saying so; never a 5xx.
        assert past.status_code in (200, 422), status_of(past)
        assert past.content == b"" if past.status_code == 200 else "past the end" in past.text
        too_much = await board.http.get(url, params={"length": 256 * 1024 + 1})
        assert too_much.status_code == 400, status_of(too_much)
        assert run["stdoutExcerpt"].rstrip().endswith("}"), run["stdoutExcerpt"][-200:]
        assert "err 0390" in run["stderrExcerpt"], run["stderrExcerpt"][-200:]
