"""Realize's added time with 100 and with 1,000 workspaces open in one project (``just bench-scale``).

Ours: ``POST /api/issues/{id}/execution-workspace`` on the running stack; limit: a raw ``git worktree
add -b`` of the same repository, interleaved with ours, so both see the same number of registered
worktrees. The added time (ours minus raw, medians) is measured once 100 workspaces are open and
again once 1,000 are: the goal is that it stays flat (at most 1.2 times), so a realizer with many
open workspaces does not slow every realize down. Repository of 200 files on tmpfs.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from tests.bench.test_realization import _git, _repo, isolated_project

pytestmark = [pytest.mark.bench, pytest.mark.e2e, pytest.mark.scale]

SMALL, LARGE = 100, int(os.environ.get("CLIPYARD_BENCH_WORKSPACES", "1000"))
ROUNDS = 15


class _Board:
    def __init__(self, board: Any, company_id: str, project_id: str, root: Path) -> None:
        self.board, self.company_id, self.project_id, self.root = (
            board,
            company_id,
            project_id,
            root,
        )
        self.count = 0

    async def realize(self) -> float:
        self.count += 1
        issue = await self.board.post(
            f"/api/companies/{self.company_id}/issues",
            json={"title": f"scale {self.count}", "projectId": self.project_id},
        )
        assert issue.status_code == 201, issue.text
        started = time.perf_counter()
        answer = await self.board.post(
            f"/api/issues/{issue.json()['id']}/execution-workspace", json={}
        )
        took = time.perf_counter() - started
        assert answer.status_code == 201, answer.text
        return took

    async def added(self, repo: Path) -> tuple[float, float]:
        """Median ours and raw over ROUNDS interleaved pairs."""
        ours, raw = [], []
        for _ in range(ROUNDS):
            self.count += 1
            started = time.perf_counter()
            await asyncio.to_thread(
                _git, repo, "worktree", "add", "-q", "-b", f"raw-{self.count}",
                str(self.root / "raw" / str(self.count)), "main",
            )  # fmt: skip
            raw.append(time.perf_counter() - started)
            ours.append(await self.realize())
        return statistics.median(ours), statistics.median(raw)


async def _fill(board: _Board, upto: int) -> None:
    while board.count < upto:
        await asyncio.gather(*(board.realize() for _ in range(min(4, upto - board.count))))


async def test_realize_added_time_stays_flat_from_100_to_1000_open(
    stack: Any, bench_report: Any
) -> None:
    from bench_harness import Comparison

    root = Path(tempfile.mkdtemp(dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        repo = _repo(root, 200)
        key, company_id, project_id = await isolated_project(stack, root, repo, "Scale")
        async with stack.client(key) as http:
            board = _Board(http, company_id, project_id, root)
            await _fill(board, SMALL)
            ours_small, raw_small = await board.added(repo)
            await _fill(board, LARGE)
            ours_large, raw_large = await board.added(repo)
        small, large = ours_small - raw_small, ours_large - raw_large
        bench_report.add(
            Comparison(
                name=f"realize added time, {SMALL} -> {LARGE:,} open",
                ours=f"realize's added time (ours - raw) with {LARGE:,} workspaces open",
                limit=f"the same with {SMALL} open",
                ours_us=large * 1e6,
                limit_us=small * 1e6,
                rounds=ROUNDS,
                ops_per_round=1,
                notes=(
                    f"at {SMALL}: ours {ours_small * 1e3:.1f} ms, raw {raw_small * 1e3:.1f} ms; "
                    f"at {LARGE:,}: ours {ours_large * 1e3:.1f} ms, raw {raw_large * 1e3:.1f} ms"
                ),
                goal_ratio=1.2,
                goal="flat (<= 1.2x)",
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
        os.sync()
