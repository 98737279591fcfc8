"""Heartbeat runs: wake-to-adapter-start latency through HTTP vs a raw spawn of the same command,
in one run.

The adapter's first action is to read the clock: ``python3 -c`` printing ``time.time()`` in the
last-line JSON ``{"usage": {}, "result": {"at": ...}}``. Ours: the time from just before
``POST /api/agents/{id}/wakeup`` to that reading (gateway -> controller: wake, queue, dispatch,
the stages up to ``adapter_launch`` -> supervisor: slot, token, spawn), read back from the run's
result once it ended. Limit: the same argv spawned by ``subprocess.Popen`` from the test, from
just before the spawn to the same reading.

Two paths: a trusted agent without an issue (no workspace, no sandbox), and an untrusted agent
on its issue's isolated workspace (the workspace realized by an untimed first run, then reused;
``bwrap``, the slot user and the worktree handed over). Rounds interleave the two sides (limit,
ours, ...); medians are reported.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.agents import PYTHON
from tests.e2e.heartbeatutil import create_agent, wait_run, wake
from tests.e2e.hostfacts import reap
from tests.e2e.runtimeutil import Board, runtime_board, status_of

pytestmark = [pytest.mark.bench, pytest.mark.e2e]

ROUNDS = 7
CLOCK = (
    "import json, time; at = time.time(); "
    "print(json.dumps({'usage': {}, 'result': {'at': at}}), flush=True)"
)
COMMAND = [PYTHON, "-c", CLOCK]


def _raw_spawn() -> float:
    """Seconds from just before spawning the command to its clock reading."""
    began = time.time()
    done = subprocess.run(COMMAND, capture_output=True, text=True, check=True)
    at = float(json.loads(done.stdout.strip().splitlines()[-1])["result"]["at"])
    return at - began


async def _ours(board: Board, agent_id: str, issue_id: str | None) -> tuple[float, float]:
    """(seconds from the wake to the adapter's clock reading, seconds to the run's end)."""
    body = {"issueId": issue_id} if issue_id else {}
    began = time.time()
    accepted = await wake(board.http, agent_id, **body)
    run = await wait_run(board.http, accepted["runId"], timeout=60)
    ended = time.time() - began
    assert run["status"] == "succeeded", run
    return float(run["result"]["at"]) - began, ended


async def _measure(
    board: Board, agent_id: str, issue_id: str | None
) -> tuple[list[float], list[float], list[float]]:
    await _ours(board, agent_id, issue_id)  # untimed: warm paths, realize the workspace
    _raw_spawn()
    ours, totals, raw = [], [], []
    for _ in range(ROUNDS):
        raw.append(_raw_spawn())
        latency, total = await _ours(board, agent_id, issue_id)
        ours.append(latency)
        totals.append(total)
    return ours, totals, raw


async def test_wake_to_adapter_start_vs_raw_spawn(
    stack: Any, tmp_path: Path, bench_report: Any
) -> None:
    from bench_harness import Comparison

    config = {"command": COMMAND, "timeoutSec": 60}
    try:
        async with runtime_board(stack, tmp_path, name="Bench") as board:
            trusted = await create_agent(board, "clock", trust="trusted", config=config)
            untrusted = await create_agent(board, "clock", name="boxed", config=config)
            issue = await board.http.post(
                f"/api/companies/{board.company['id']}/issues",
                json={"title": "Bench", "projectId": board.project["id"], "status": "todo"},
            )
            assert issue.status_code == 201, status_of(issue)
            measured = {
                "trusted, no workspace": await _measure(board, trusted["id"], None),
                "untrusted, isolated workspace": await _measure(
                    board, untrusted["id"], issue.json()["id"]
                ),
            }
    finally:
        reap(stack.home)
    for path, (ours, totals, raw) in measured.items():
        bench_report.add(
            Comparison(
                name=f"wake to adapter start ({path.split(',')[0]})",
                ours=f"POST /api/agents/{{id}}/wakeup to the adapter's first action ({path})",
                limit="the same `python3 -c` spawned by subprocess, to its first action",
                ours_us=statistics.median(ours) * 1e6,
                limit_us=statistics.median(raw) * 1e6,
                rounds=ROUNDS,
                ops_per_round=1,
                notes=(
                    f"{path}: min ours {min(ours) * 1e3:.1f} ms, raw {min(raw) * 1e3:.1f} ms; "
                    f"wake to the run read back ended took {statistics.median(totals) * 1e3:.1f}"
                    " ms (median, polling every 100 ms)"
                ),
                goal_added_us=12_000 if path.startswith("trusted") else 35_000,
                goal="<= raw + 12 ms" if path.startswith("trusted") else "<= raw + 35 ms",
            )
        )
