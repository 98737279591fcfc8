"""Workspaces spread over two worker nodes against one node, in one run (issue 18's numbers).

A :class:`ClusterStack` with its two worker nodes (``local`` and ``nodeb``, each a realizer host
part and a supervisor with its own home). Three projects, each with a repo-only project workspace
created without ``nodeId``: the placement rule puts ``solo`` on the least loaded node (both
empty: ``local``, by id), ``left`` on the other (``nodeb``) and ``right`` on ``local`` again (one
each: by id), where each is cloned.

- One node: :data:`BASELINE` issues of ``solo`` realized (a git worktree each) through gateway A.
- Two nodes: :data:`WORKSPACES` issues of ``left`` and ``right`` (so both nodes), alternating the
  gateways (A and B). Each workspace must be on its project workspace's node; the count per node
  is reported.

The phases are interleaved, one request at a time: each round realizes one ``solo`` issue, then
one of ``left`` and one of ``right``, so the three projects grow alike (a realize costs more as
its project's worktrees grow). Node A holds ``solo``'s worktrees too, so the two-node numbers
are measured on the busier host.

The time of each ``POST /api/issues/{id}/execution-workspace`` (201) is measured; p50 and p99 of
each phase are reported, and the ratio of the two-node p99 to the one-node p99 (goal: within
1.2x: a request for a node-B workspace through gateway A costs one hop more, not more work).
Results in the session's report and ``results/worker_nodes.json``. ``CLIPYARD_BENCH_WORKSPACES``
changes :data:`WORKSPACES` (default 1000; the baseline is half of it).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.bench.clusterload import percentile
from tests.e2e.gitutil import make_repo
from tests.e2e.runtimeutil import ISOLATED

from clipyard_cli.clusterprocs import ClusterPorts
from clipyard_cli.clusterstack import ClusterStack

pytestmark = [pytest.mark.bench, pytest.mark.cluster, pytest.mark.scale]

WORKSPACES = int(os.environ.get("CLIPYARD_BENCH_WORKSPACES", "1000"))
BASELINE = max(WORKSPACES // 2, 10)
READY_TIMEOUT = 120.0


async def _ok(answer: httpx.Response, status: int) -> dict[str, Any]:
    assert answer.status_code == status, f"{answer.status_code} {answer.text[:1000]}"
    body: dict[str, Any] = answer.json()
    return body


class Company:
    """A company's board on both gateways, its projects and their project workspaces."""

    def __init__(self, gateways: list[httpx.AsyncClient], company: str) -> None:
        self.gateways = gateways
        self.company = company
        self.projects: list[dict[str, Any]] = []
        self.sources: list[dict[str, Any]] = []

    async def project(self, name: str, repo: Path) -> dict[str, Any]:
        a = self.gateways[0]
        project = await _ok(
            await a.post(
                f"/api/companies/{self.company}/projects",
                json={"name": name, "executionWorkspacePolicy": ISOLATED},
            ),
            201,
        )
        made = await a.post(
            f"/api/projects/{project['id']}/workspaces",
            json={"name": "main", "repoUrl": str(repo), "isPrimary": True},
        )
        while made.status_code == 403:  # the host access grant on its way to the host parts
            await asyncio.sleep(0.2)
            made = await a.post(
                f"/api/projects/{project['id']}/workspaces",
                json={"name": "main", "repoUrl": str(repo), "isPrimary": True},
            )
        source = await _ok(made, 201)
        self.projects.append(project)
        self.sources.append(source)
        return source

    async def realize(
        self, gateway: httpx.AsyncClient, project: dict[str, Any]
    ) -> tuple[float, Any]:
        issue = await _ok(
            await gateway.post(
                f"/api/companies/{self.company}/issues",
                json={"title": "bench", "projectId": project["id"], "status": "in_progress"},
            ),
            201,
        )
        began = time.perf_counter()
        answer = await gateway.post(f"/api/issues/{issue['id']}/execution-workspace", json={})
        spent = time.perf_counter() - began
        return spent, (await _ok(answer, 201))["workspace"]


def _summary(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50_ms": statistics.median(samples) * 1000,
        "p99_ms": percentile(samples, 99) * 1000,
    }


async def test_realize_on_two_worker_nodes_against_one(tmp_path: Path, bench_report: Any) -> None:
    env = {**os.environ, "CLIPYARD_HOME": str(tmp_path / "home")}
    env.pop("CLIPYARD_NODE_ID", None)
    stack = ClusterStack(
        tmp_path / "home", ports=ClusterPorts.free(), env=env, ready_timeout=READY_TIMEOUT
    )
    await stack.start()
    try:
        admin = {"Authorization": f"Bearer {stack.admin_key}"}
        async with httpx.AsyncClient(base_url=stack.gateway_urls[0], headers=admin) as root:
            company = (await _ok(await root.post("/api/companies", json={"name": "Bench"}), 201))[
                "id"
            ]
            key = await _ok(
                await root.post(
                    f"/api/companies/{company}/api-keys", json={"name": "b", "kind": "board"}
                ),
                201,
            )
            await _ok(
                await root.put(
                    f"/api/companies/{company}/host-access",
                    json={"allowedRoots": [str(tmp_path)]},
                ),
                200,
            )
        board = {"Authorization": f"Bearer {key['key']}"}
        gateways = [
            httpx.AsyncClient(base_url=url, headers=board, timeout=120.0)
            for url in stack.gateway_urls
        ]
        try:
            results = await _measure(Company(gateways, company), tmp_path)
        finally:
            for gateway in gateways:
                await gateway.aclose()
    finally:
        await stack.stop()

    one, two = results["one_node"], results["two_nodes"]
    ratio = two["p99_ms"] / one["p99_ms"]
    results["p99_ratio"] = ratio
    print(json.dumps(results, indent=2))
    from bench_harness import RESULTS

    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "worker_nodes.json").write_text(json.dumps(results, indent=2) + "\n")
    bench_report.add(
        bench_report_comparison(two["p50_ms"], one["p50_ms"], results["per_node"], ratio)
    )
    assert results["placed_by_rule"], results


def bench_report_comparison(two_p50: float, one_p50: float, per_node: Any, ratio: float) -> Any:
    from bench_harness import Comparison

    return Comparison(
        name="realize, two nodes vs one (p50)",
        ours=f"{WORKSPACES} realizes over two worker nodes, both gateways",
        limit=f"{BASELINE} realizes on one node, one gateway",
        ours_us=two_p50 * 1000,
        limit_us=one_p50 * 1000,
        rounds=1,
        ops_per_round=WORKSPACES,
        notes=f"per node {per_node}; p99 ratio {ratio:.2f}x (goal 1.2x)",
    )


async def _measure(company: Company, tmp_path: Path) -> dict[str, Any]:
    repo = make_repo(tmp_path / "src")
    solo = await company.project("solo", repo)
    left = await company.project("left", repo)
    right = await company.project("right", repo)
    placed = (solo["nodeId"], left["nodeId"], right["nodeId"])
    a, b = company.gateways
    one: list[float] = []
    two: list[float] = []
    per_node: dict[str, int] = {}
    # Interleaved rounds: one realize of the one-node project, then one of each two-node
    # project, so every project has as many worktrees as the others at every moment (a realize
    # costs more as its project's worktrees grow).
    for n in range(WORKSPACES // 2):
        spent, workspace = await company.realize(a, company.projects[0])
        assert workspace["nodeId"] == solo["nodeId"], workspace
        one.append(spent)
        for k, source in ((1, left), (2, right)):
            gateway = (a, b)[(n + k) % 2]
            spent, workspace = await company.realize(gateway, company.projects[k])
            assert workspace["nodeId"] == source["nodeId"], (workspace, source)
            per_node[workspace["nodeId"]] = per_node.get(workspace["nodeId"], 0) + 1
            two.append(spent)
    return {
        "placed": list(placed),
        "placed_by_rule": placed == ("local", "nodeb", "local"),
        "one_node": _summary(one),
        "two_nodes": _summary(two),
        "per_node": per_node,
    }
