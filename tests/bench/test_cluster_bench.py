"""The replicated control plane against the single-node stack, in one run (issue 17's numbers).

Started side by side: a :class:`ClusterStack` (three NATS nodes with JetStream R3, one
PostgreSQL, two replicas of api-gateway, heartbeat-controller and git-credentials; the default
lease TTL, 5 s) and two single-node ``clipyard up`` stacks: one on its embedded default (SQLite),
one on PostgreSQL (a server started as the cluster starts its own, a role and schema per service),
so that the second ratio shows what replication costs on the same kind of store.

- Request latency: the same mix (four ``GET /api/companies/{id}`` with a board key, which the
  gateway answers from memory, to one ``POST /api/companies/{id}/issues``, a command over the bus
  to the workspace-realizer, which stores it and answers) through gateway A, gateway B and each
  single-node gateway, one request at a time on a keep-alive connection (``clusterload.py``).
  One untimed round per target first (the stacks settle after their start: without it the
  cluster's first rounds showed a p99 near twice its later ones); then rounds interleave the
  targets, their order rotated each round; p50 and p99 are taken over every round's requests of a
  target (also of the ``GET``s right after a ``POST``: ``GET+1``). Ratio: the slower cluster gateway's p99 over the single node's
  (goal: within 1.5x).
- Write to visible: a company created on one gateway (admin key), then the other asked for it
  (``GET /api/companies/{id}``, again 1 ms after each answer) until it answers 200: the time from
  the 201 to that answer. The gateways take turns as the writer (goal: p99 under 1 s).
- Lease handover: the holder of heartbeat-controller's lease (then git-credentials') is SIGKILLed;
  the time until the other replica says ``leader`` in its ``$SRV.STATS`` (asked every 20 ms); the
  killed replica is restarted (it stands by); three times each. Median and max against the TTL
  (goal: under two TTLs; the design promises 4/3 of one).

Only wide margins are asserted (every answer right, every handover within four TTLs); the numbers
are printed, added to the session's report and written to ``results/cluster.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.bench.clusterload import RawClient, percentile
from tests.upstack import Up, running_up

from clipyard_cli.bus import InstanceStatus, read_model_health, service_instances
from clipyard_cli.clusterpg import ClusterPostgres
from clipyard_cli.clusterprocs import ClusterPorts
from clipyard_cli.clusterstack import ClusterStack

pytestmark = [pytest.mark.bench, pytest.mark.cluster]

ROUNDS = 5
READS, WRITES = 400, 100
"""Per target and round: a ``POST`` after every four ``GET``s."""
WARM_UP = 1
"""Untimed rounds per target before the first (the stacks settle after their start)."""
VISIBILITY_WRITES = 100
HANDOVERS = 3
LEASE_TTL = 5.0
"""Seconds: the default lease TTL (``CLIPYARD_LEASE_TTL`` is unset for the cluster)."""
LEASE_SERVICES = ("heartbeat-controller", "git-credentials")
READY_TIMEOUT = 120.0
HOST = "127.0.0.1"
SINGLES = (("single node, SQLite", "sqlite"), ("single node, PostgreSQL", "postgres"))
"""The single-node targets and their stores, in the order their stacks start."""


@dataclass
class Target:
    """A gateway the request mix goes through, and what it measured (seconds per request)."""

    name: str
    port: int
    company_id: str
    project_id: str
    board_key: str
    reads: list[float] = field(default_factory=list)
    writes: list[float] = field(default_factory=list)
    reads_after_write: list[float] = field(default_factory=list)
    """The ``GET``s sent right after a ``POST`` (also in ``reads``)."""
    reads_later: list[float] = field(default_factory=list)
    """The other ``GET``s (also in ``reads``)."""
    round_p99: list[float] = field(default_factory=list)

    @property
    def mix(self) -> list[float]:
        return self.reads + self.writes

    def summary(self) -> dict[str, Any]:
        """p50/p99 in ms of the mix, the reads and the writes."""
        out: dict[str, Any] = {"target": self.name}
        for kind, values in (("mix", self.mix), ("get", self.reads), ("post", self.writes)):
            out[kind] = {
                "p50_ms": round(percentile(values, 50) * 1e3, 3),
                "p99_ms": round(percentile(values, 99) * 1e3, 3),
                "requests": len(values),
            }
        out["mix"]["round_p99_ms"] = [round(v * 1e3, 3) for v in self.round_p99]
        for part, values in (("after_post", self.reads_after_write), ("later", self.reads_later)):
            out["get"][f"{part}_p50_ms"] = round(percentile(values, 50) * 1e3, 3)
            out["get"][f"{part}_p99_ms"] = round(percentile(values, 99) * 1e3, 3)
        return out


def _port(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1].split("/", 1)[0])


async def _board(api: str, admin_key: str, name: str) -> tuple[str, str, str]:
    """(company id, project id, board key) of a new company made through ``api``."""
    admin = {"Authorization": f"Bearer {admin_key}"}
    async with httpx.AsyncClient(base_url=api, headers=admin, timeout=30) as http:
        company = await http.post("/api/companies", json={"name": name})
        assert company.status_code == 201, company.text
        company_id = company.json()["id"]
        key = await http.post(
            f"/api/companies/{company_id}/api-keys", json={"name": "bench", "kind": "board"}
        )
        assert key.status_code == 201, key.text
        board = key.json()["key"]
        project = await http.post(
            f"/api/companies/{company_id}/projects",
            json={"name": "Bench"},
            headers={"Authorization": f"Bearer {board}"},
        )
        assert project.status_code == 201, project.text
        return company_id, project.json()["id"], board


async def _until_answers(port: int, key: str, path: str, timeout: float = 10.0) -> None:
    async with RawClient(HOST, port, key) as http:
        deadline = time.monotonic() + timeout
        while (await http.get(path)).status != 200:
            assert time.monotonic() < deadline, f"{path} not answered on :{port}"
            await asyncio.sleep(0.01)


async def _round(target: Target, reads: int, writes: int, *, keep: bool) -> None:
    """``reads + writes`` requests, a ``POST`` after every ``reads // writes`` ``GET``s."""
    every = (reads + writes) // writes
    get_path = f"/api/companies/{target.company_id}"
    post_path = f"/api/companies/{target.company_id}/issues"
    mix: list[float] = []
    async with RawClient(HOST, target.port, target.board_key) as http:
        for n in range(reads + writes):
            if n % every == every - 1:
                body = json.dumps({"title": f"bench {n}", "projectId": target.project_id})
                answer = await http.post(post_path, body.encode())
                assert answer.status == 201, answer.body[:300]
                if keep:
                    target.writes.append(answer.took)
            else:
                answer = await http.get(get_path)
                assert answer.status == 200, answer.body[:300]
                if keep:
                    target.reads.append(answer.took)
                    after_write = n % every == 0 and n > 0
                    part = target.reads_after_write if after_write else target.reads_later
                    part.append(answer.took)
            mix.append(answer.took)
    if keep:
        target.round_p99.append(percentile(mix, 99))


async def _latency(targets: list[Target]) -> None:
    for target in targets:
        for _ in range(WARM_UP):
            await _round(target, READS, WRITES, keep=False)
    for n in range(ROUNDS):
        for target in targets[n % len(targets) :] + targets[: n % len(targets)]:
            await _round(target, READS, WRITES, keep=True)


async def _write_visible(writer: RawClient, reader: RawClient, n: int) -> float:
    """Seconds from the 201 of a company created through ``writer`` to ``reader``'s 200."""
    made = await writer.post("/api/companies", json.dumps({"name": f"Visible {n}"}).encode())
    assert made.status == 201, made.body[:300]
    acked = time.perf_counter()
    path = f"/api/companies/{json.loads(made.body)['id']}"
    while True:
        seen = await reader.get(path)
        if seen.status == 200:
            return time.perf_counter() - acked
        assert seen.status == 404, seen.body[:300]
        assert time.perf_counter() - acked < 10.0, f"{path} not visible within 10 s"
        await asyncio.sleep(0.001)


async def _visibility(cluster: ClusterStack) -> tuple[list[float], list[float]]:
    """(A to B, B to A) seconds, the gateways taking turns as the writer."""
    a_port, b_port = (_port(url) for url in cluster.gateway_urls)
    a_to_b: list[float] = []
    b_to_a: list[float] = []
    async with (
        RawClient(HOST, a_port, cluster.admin_key) as a,
        RawClient(HOST, b_port, cluster.admin_key) as b,
    ):
        for n in range(VISIBILITY_WRITES):
            if n % 2 == 0:
                a_to_b.append(await _write_visible(a, b, n))
            else:
                b_to_a.append(await _write_visible(b, a, n))
    return a_to_b, b_to_a


async def _leader_and_standby(
    nc: Any, service: str, timeout: float = 30.0
) -> tuple[InstanceStatus, InstanceStatus]:
    """The replica holding ``service``'s lease and the one standing by, once both say so."""
    deadline = time.monotonic() + timeout
    while True:
        rows = [r for r in await service_instances(nc, service) if r.health is not None]
        leaders = [r for r in rows if r.health is not None and r.health.role == "leader"]
        standby = [r for r in rows if r.health is not None and r.health.role == "standby"]
        if len(rows) == 2 and len(leaders) == 1 and len(standby) == 1:
            return leaders[0], standby[0]
        assert time.monotonic() < deadline, f"{service}: no leader and standby: {rows}"
        await asyncio.sleep(0.1)


async def _handover(cluster: ClusterStack, nc: Any, service: str) -> float:
    """Seconds from SIGKILL of ``service``'s lease holder to the other replica saying
    ``leader``; the killed replica is restarted afterwards."""
    holder, other = await _leader_and_standby(nc, service)
    index = int(holder.instance.rsplit("-", 1)[1])
    began = time.monotonic()
    cluster.kill(service, index, signal.SIGKILL)
    while True:
        health = await read_model_health(nc, service, timeout=0.5, micro_id=other.id)
        took = time.monotonic() - began
        if health is not None and health.role == "leader":
            break
        assert took < 4 * LEASE_TTL, f"{other.instance} did not take {service}'s lease"
        await asyncio.sleep(0.02)
    await cluster.restart(service, index)
    return took


def _render(
    summaries: list[dict[str, Any]],
    ratios: dict[str, float],
    visible: dict[str, Any],
    handovers: dict[str, Any],
) -> str:
    lines = [
        "",
        "cluster bench: request latency (ms), one request at a time; GET+1: the GET right after"
        " a POST",
        f"{'target':<24} {'mix p50':>8} {'mix p99':>8} {'GET p50':>8} {'GET p99':>8}"
        f" {'GET+1 p99':>9} {'POST p50':>9} {'POST p99':>9}  mix p99 per round",
    ]
    for s in summaries:
        lines.append(
            f"{s['target']:<24} {s['mix']['p50_ms']:>8.2f} {s['mix']['p99_ms']:>8.2f}"
            f" {s['get']['p50_ms']:>8.2f} {s['get']['p99_ms']:>8.2f}"
            f" {s['get']['after_post_p99_ms']:>9.2f}"
            f" {s['post']['p50_ms']:>9.2f} {s['post']['p99_ms']:>9.2f}"
            f"  {' '.join(f'{v:.0f}' for v in s['mix']['round_p99_ms'])}"
        )
    lines.append(
        "slower cluster gateway's mix p99 / single node's: "
        + ", ".join(f"{store} {ratio:.2f}x" for store, ratio in ratios.items())
        + " (goal 1.5x)"
    )
    lines.append(
        f"write to visible on the other gateway ({visible['writes']} writes): "
        f"p50 {visible['p50_ms']:.1f} ms, p99 {visible['p99_ms']:.1f} ms, "
        f"max {visible['max_ms']:.1f} ms (goal p99 < 1000 ms)"
    )
    for service, h in handovers.items():
        lines.append(
            f"{service} lease handover after SIGKILL: median {h['median_s']:.2f} s, "
            f"max {h['max_s']:.2f} s, samples {h['samples_s']} (TTL {LEASE_TTL:g} s, "
            f"goal < {2 * LEASE_TTL:g} s)"
        )
    return "\n".join(lines)


async def test_cluster_latency_visibility_and_handover(tmp_path: Path, bench_report: Any) -> None:
    from bench_harness import RESULTS, Comparison

    env = {**os.environ, "CLIPYARD_HOME": str(tmp_path / "cluster")}
    env.pop("CLIPYARD_LEASE_TTL", None)
    cluster = ClusterStack(
        tmp_path / "cluster", ports=ClusterPorts.free(), env=env, ready_timeout=READY_TIMEOUT
    )
    postgres = ClusterPostgres(tmp_path / "pg-home", env)
    singles: list[Up] = []
    with contextlib.ExitStack() as ups:
        try:
            for folder in ("single-sqlite", "single-pg"):
                (tmp_path / folder).mkdir()
            await postgres.start(READY_TIMEOUT)
            dsns = {
                f"CLIPYARD_POSTGRES_DSN_{t.upper()}": d for t, d in postgres.service_dsns.items()
            }
            singles.append(ups.enter_context(running_up(tmp_path / "single-sqlite")))
            singles.append(
                ups.enter_context(
                    running_up(tmp_path / "single-pg", CLIPYARD_STORE="postgres", **dsns)
                )
            )
            await cluster.start()
            await asyncio.gather(*(asyncio.to_thread(up.wait_healthy) for up in singles))

            targets: list[Target] = []
            for up, (name, _) in zip(singles, SINGLES, strict=True):
                api = up.api.removesuffix("/api")
                company, project, key = await _board(api, up.stack.admin_key, "Bench")
                targets.append(Target(name, _port(api), company, project, key))
            a_url, b_url = cluster.gateway_urls
            company, project, key = await _board(a_url, cluster.admin_key, "Bench")
            await _until_answers(_port(b_url), key, f"/api/companies/{company}")
            for name, url in (("cluster gateway A", a_url), ("cluster gateway B", b_url)):
                targets.append(Target(name, _port(url), company, project, key))

            await _latency(targets)
            a_to_b, b_to_a = await _visibility(cluster)
            nc = await cluster.connect()
            try:
                took = {
                    service: [await _handover(cluster, nc, service) for _ in range(HANDOVERS)]
                    for service in LEASE_SERVICES
                }
            finally:
                await nc.close()
        finally:
            for up in singles:
                if up.proc.poll() is None:
                    with contextlib.suppress(Exception):
                        await asyncio.to_thread(up.interrupt)
            await cluster.stop()
            await postgres.stop()

    summaries = [t.summary() for t in targets]
    by_name = {s["target"]: s for s in summaries}
    a, b = by_name["cluster gateway A"], by_name["cluster gateway B"]
    slower = max(a, b, key=lambda s: s["mix"]["p99_ms"])
    visible_all = a_to_b + b_to_a
    visible: dict[str, Any] = {
        "writes": len(visible_all),
        "p50_ms": percentile(visible_all, 50) * 1e3,
        "p99_ms": percentile(visible_all, 99) * 1e3,
        "max_ms": max(visible_all) * 1e3,
        "a_to_b_p99_ms": percentile(a_to_b, 99) * 1e3,
        "b_to_a_p99_ms": percentile(b_to_a, 99) * 1e3,
    }
    handovers: dict[str, dict[str, Any]] = {
        service: {
            "median_s": round(statistics.median(samples), 3),
            "max_s": round(max(samples), 3),
            "samples_s": [round(s, 3) for s in samples],
            "ttl_s": LEASE_TTL,
        }
        for service, samples in took.items()
    }
    ratios = {
        label: round(slower["mix"]["p99_ms"] / by_name[name]["mix"]["p99_ms"], 4)
        for name, label in SINGLES
    }
    print(_render(summaries, ratios, visible, handovers))

    def p(s: dict[str, Any], kind: str) -> str:
        return f"{s[kind]['p50_ms']:.2f}/{s[kind]['p99_ms']:.2f}"

    for single_name, label in SINGLES:
        single = by_name[single_name]
        bench_report.add(
            Comparison(
                name=f"cluster p99 / single-node {label}",
                ours=f"slower cluster gateway ({slower['target'][-1]}): 4 GET company + "
                "1 POST issue, p99",
                limit=f"single-node clipyard up on {label}, same mix, p99 (goal: 1.5x)",
                ours_us=slower["mix"]["p99_ms"] * 1e3,
                limit_us=single["mix"]["p99_ms"] * 1e3,
                rounds=ROUNDS,
                ops_per_round=READS + WRITES,
                notes=(
                    f"p50/p99 ms mix: A {p(a, 'mix')}, B {p(b, 'mix')}, single {p(single, 'mix')};"
                    f" GET: A {p(a, 'get')}, B {p(b, 'get')}, single {p(single, 'get')};"
                    f" POST issue: A {p(a, 'post')}, B {p(b, 'post')}, single {p(single, 'post')}"
                ),
            )
        )
    bench_report.add(
        Comparison(
            name="write visible on other gateway p99",
            ours="company created on one gateway until the other answers 200 (from the 201)",
            limit="goal: p99 under 1 s",
            ours_us=visible["p99_ms"] * 1e3,
            limit_us=1e6,
            rounds=1,
            ops_per_round=len(visible_all),
            notes=(
                f"p50 {visible['p50_ms']:.1f} ms, p99 {visible['p99_ms']:.1f} ms, max "
                f"{visible['max_ms']:.1f} ms; p99 A->B {visible['a_to_b_p99_ms']:.1f} ms, "
                f"B->A {visible['b_to_a_p99_ms']:.1f} ms; polled every ~1 ms"
            ),
        )
    )
    for service, h in handovers.items():
        bench_report.add(
            Comparison(
                name=f"{service} handover",
                ours=f"SIGKILL of {service}'s lease holder until the other says leader (median)",
                limit=f"goal: 2 TTLs ({2 * LEASE_TTL:g} s)",
                ours_us=h["median_s"] * 1e6,
                limit_us=2 * LEASE_TTL * 1e6,
                rounds=HANDOVERS,
                ops_per_round=1,
                notes=f"TTL {LEASE_TTL:g} s; max {h['max_s']:.2f} s; samples {h['samples_s']} s",
            )
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cluster.json").write_text(
        json.dumps(
            {
                "measuredAt": time.time(),
                "latency": summaries,
                "clusterP99OverSingle": ratios,
                "writeToVisible": visible,
                "leaseHandover": handovers,
            },
            indent=2,
        )
    )
