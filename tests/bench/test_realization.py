"""Realization through HTTP vs a raw ``git worktree add`` of the same repository, in one run.

Repositories of 1,000 and 10,000 files on tmpfs (``/dev/shm``; the root disk's speed swings ten
times within minutes). Ours: ``POST /api/issues/{id}/execution-workspace`` on the running stack
(gateway -> NATS -> realizer: mode resolution, base ref, ``git worktree add``, operations
recorded, events published). Limit: ``git worktree add -b`` run directly. p50 and p95 of each.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.bench, pytest.mark.e2e]

ROUNDS = 15
ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "b@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "b@example.com",
    "PATH": "/usr/bin:/bin",
}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, env=ENV | {"HOME": str(cwd)}
    )


def _repo(root: Path, files: int) -> Path:
    repo = root / f"repo-{files}"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "gc.auto", "0")
    for index in range(files):
        folder = repo / f"d{index // 500}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{index}.txt").write_text(f"file {index}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "files")
    return repo


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def isolated_project(stack: Any, root: Path, repo: Path, name: str) -> tuple[str, str, str]:
    """A company allowed ``root`` (``PUT .../host-access``), a board key of it, and a project of
    one worktree per issue under ``root/worktrees``, its primary workspace ``repo``.

    Returns:
        The board key, the company's id and the project's id.
    """
    async with stack.admin as admin:
        company = (await admin.post("/api/companies", json={"name": name})).json()
        allowed = await admin.put(
            f"/api/companies/{company['id']}/host-access", json={"allowedRoots": [str(root)]}
        )
        assert allowed.status_code == 200, allowed.text
        key = (
            await admin.post(
                f"/api/companies/{company['id']}/api-keys", json={"name": "b", "kind": "board"}
            )
        ).json()["key"]
    strategy = {
        "type": "git_worktree",
        "baseRef": "main",
        "worktreeParentDir": str(root / "worktrees"),
    }
    policy = {"enabled": True, "defaultMode": "isolated_workspace", "workspaceStrategy": strategy}
    async with stack.client(key) as board:
        project = await board.post(
            f"/api/companies/{company['id']}/projects",
            json={"name": name, "executionWorkspacePolicy": policy},
        )
        assert project.status_code == 201, project.text
        created = await board.post(
            f"/api/projects/{project.json()['id']}/workspaces",
            json={"name": "repo", "cwd": str(repo), "isPrimary": True},
        )
        assert created.status_code == 201, created.text
    return key, company["id"], project.json()["id"]


@pytest.mark.parametrize("files", [1_000, 10_000])
async def test_realization_vs_raw_worktree_add(stack: Any, files: int, bench_report: Any) -> None:
    from bench_harness import Comparison

    root = Path(tempfile.mkdtemp(dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        repo = _repo(root, files)
        key, company_id, project_id = await isolated_project(stack, root, repo, "Bench")
        async with stack.client(key) as board:
            ours: list[float] = []
            raw: list[float] = []
            for index in range(ROUNDS):
                started = time.perf_counter()
                await asyncio.to_thread(
                    _git,
                    repo,
                    "worktree",
                    "add",
                    "-q",
                    "-b",
                    f"raw-{index}",
                    str(root / "raw" / str(index)),
                    "main",
                )
                raw.append(time.perf_counter() - started)
                issue = (
                    await board.post(
                        f"/api/companies/{company_id}/issues",
                        json={"title": f"bench {index}", "projectId": project_id},
                    )
                ).json()
                started = time.perf_counter()
                answer = await board.post(f"/api/issues/{issue['id']}/execution-workspace", json={})
                ours.append(time.perf_counter() - started)
                assert answer.status_code == 201, answer.text
        bench_report.add(
            Comparison(
                name=f"realize, {files:,} files (tmpfs)",
                ours="POST /api/issues/{id}/execution-workspace (HTTP -> NATS -> realizer -> git)",
                limit="raw `git worktree add -b` of the same repository",
                ours_us=statistics.median(ours) * 1e6,
                limit_us=statistics.median(raw) * 1e6,
                rounds=ROUNDS,
                ops_per_round=1,
                notes=(
                    f"p95 ours {_p(ours, 0.95) * 1e3:.1f} ms, raw {_p(raw, 0.95) * 1e3:.1f} ms; "
                    f"p95 ratio {_p(ours, 0.95) / _p(raw, 0.95):.2f}"
                ),
                goal_added_us=15_000 if files == 1_000 else None,
                goal_ratio=1.05 if files == 10_000 else None,
                goal="<= raw + 15 ms" if files == 1_000 else "<= 1.05x (cold)",
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
        os.sync()


def _pool_ready(repo: Path, size: int) -> bool:
    """Whether ``size`` pooled worktrees of ``repo`` are registered and fully checked out (git
    marks one it is still writing ``locked``)."""
    listed = subprocess.run(
        ["git", "worktree", "list", "--porcelain"], cwd=repo, capture_output=True, text=True
    ).stdout.split("\n\n")
    pooled = [block for block in listed if "/.clipyard-pool/" in block]
    return len(pooled) == size and not any("\nlocked" in block for block in pooled)


@pytest.mark.parametrize(
    "stack_env",
    [{"CLIPYARD_WORKTREE_POOL_SIZE": "1", "CLIPYARD_WORKTREE_POOL_MIN_FREE_MB": "0"}],
)
async def test_realization_from_the_pool_vs_raw_worktree_add(stack: Any, bench_report: Any) -> None:
    from bench_harness import Comparison

    files = 10_000
    root = Path(tempfile.mkdtemp(dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        repo = _repo(root, files)
        key, company_id, project_id = await isolated_project(stack, root, repo, "Pool")
        async with stack.client(key) as board:
            ours: list[float] = []
            raw: list[float] = []
            for index in range(ROUNDS + 1):  # the first realize is cold and warms the pool
                for _ in range(400):
                    if index == 0 or _pool_ready(repo, 1):
                        break
                    await asyncio.sleep(0.025)
                else:
                    raise AssertionError("the pool was not refilled within 10 s")
                await asyncio.sleep(0.1)
                started = time.perf_counter()
                target = str(root / "raw" / str(index))
                await asyncio.to_thread(
                    _git, repo, "worktree", "add", "-q", "-b", f"raw-{index}", target, "main"
                )
                took = time.perf_counter() - started
                issue = (
                    await board.post(
                        f"/api/companies/{company_id}/issues",
                        json={"title": f"pool {index}", "projectId": project_id},
                    )
                ).json()
                started = time.perf_counter()
                answer = await board.post(f"/api/issues/{issue['id']}/execution-workspace", json={})
                assert answer.status_code == 201, answer.text
                if index:
                    ours.append(time.perf_counter() - started)
                    raw.append(took)
        bench_report.add(
            Comparison(
                name=f"realize, {files:,} files, from the worktree pool (tmpfs)",
                ours="POST /api/issues/{id}/execution-workspace, a pooled worktree handed out",
                limit="raw `git worktree add -b` of the same repository (cold)",
                ours_us=statistics.median(ours) * 1e6,
                limit_us=statistics.median(raw) * 1e6,
                rounds=ROUNDS,
                ops_per_round=1,
                notes=f"p95 ours {_p(ours, 0.95) * 1e3:.1f} ms, raw {_p(raw, 0.95) * 1e3:.1f} ms",
                goal_ratio=0.25,
                goal="<= 0.25x with the pool",
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
        os.sync()
