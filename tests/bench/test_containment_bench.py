"""Containment's cost: a contained service's start-to-ready and a contained job vs the same
commands unconfined, in one run (docs/design/isolation.md). The issue aims at 50 ms or less of
difference per start.

Service. Ours: the supervisor's launch path without the bus: the company's identity and a fresh
cgroup unit (``Launcher.prepare``), the workspace's network namespace, the service wrapper
running ``nsenter … bwrap … setpriv … python3 -m http.server`` in the unit, the relay of its port
to the host, and a plain HTTP GET on the host port every 5 ms until it answers; then the unit
ended. Limit: the same wrapper running the command unconfined, probed the same way.

Job. Ours: ``true`` run as a contained job (prepare, ``run_job`` under the sandbox, the unit
ended). Limit: ``run_job`` of ``true`` unconfined.

Namespace. Ours: a workspace's first launch makes its network namespace (``Launcher.namespace``:
``ip netns add``, loopback up, the default route, the packet rules, and its egress gate process
started and listening), then it is dropped. Limit: ``ip netns add`` and ``ip netns delete``.

Rounds interleave the sides; medians are reported, with the difference in milliseconds.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.hostfacts import answers, free_port

from runtime_supervisor.adapters.containment.cgroups import Limits
from runtime_supervisor.adapters.containment.launcher import Launcher, joiner
from runtime_supervisor.adapters.containment.relays import ensure_service_relay, stop_service_relay
from runtime_supervisor.adapters.containment.sandbox import contained_env
from runtime_supervisor.adapters.process import run_job, spawn_service, stop_group

pytestmark = pytest.mark.bench

ROUNDS = 7
SERVER = "exec /usr/bin/python3 -m http.server {port} --bind 127.0.0.1"
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


async def _until_answers(port: int) -> None:
    deadline = time.monotonic() + 20
    while not answers(port):
        assert time.monotonic() < deadline, f"nothing answered on {port}"
        await asyncio.sleep(0.005)


async def test_contained_start_and_job_vs_unconfined(bench_report: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    launcher = await asyncio.to_thread(Launcher.start, home)
    assert launcher.available, launcher.detail
    namespace = await asyncio.to_thread(launcher.namespace, "bench-workspace")

    async def unconfined_start() -> None:
        port = free_port()
        spawned = await spawn_service(command=SERVER.format(port=port), cwd=worktree, env=ENV,
                                      run_dir=tmp_path / "runs" / str(uuid.uuid4()))  # fmt: skip
        await _until_answers(port)
        await stop_group(spawned.pgid, grace=0)

    async def contained_start() -> None:
        port, unit = free_port(), f"svc-{uuid.uuid4()}"
        run_dir = tmp_path / "runs" / unit
        contained = await asyncio.to_thread(launcher.prepare, "bench-co", unit, Limits(),
                                            own=[worktree])  # fmt: skip
        prefix = launcher.command([], contained, cwd=worktree, writable=[worktree],
                                  netns=namespace)  # fmt: skip
        relay = asyncio.ensure_future(  # as the supervisor does, beside the spawn
            asyncio.to_thread(ensure_service_relay, run_dir, port, namespace)
        )
        spawned = await spawn_service(
            command=SERVER.format(port=port), cwd=worktree, run_dir=run_dir,
            env=contained_env(dict(ENV), contained.identity), prefix=prefix,
            preexec=joiner(contained.unit),
        )  # fmt: skip
        await relay
        await _until_answers(port)
        await stop_group(spawned.pgid, grace=0)
        await asyncio.to_thread(stop_service_relay, run_dir)
        await asyncio.to_thread(contained.unit.kill)
        await asyncio.to_thread(contained.unit.remove)

    async def unconfined_job() -> None:
        result = await run_job(command="true", cwd=worktree, env=ENV, timeout=30)
        assert result.exit_code == 0

    async def contained_job() -> None:
        unit = f"job-{uuid.uuid4()}"
        contained = await asyncio.to_thread(launcher.prepare, "bench-co", unit, Limits(),
                                            own=[worktree])  # fmt: skip
        prefix = launcher.command([], contained, cwd=worktree, writable=[worktree],
                                  netns=namespace)  # fmt: skip
        result = await run_job(command="true", cwd=worktree,
                               env=contained_env(dict(ENV), contained.identity), timeout=30,
                               prefix=prefix, preexec=joiner(contained.unit))  # fmt: skip
        assert result.exit_code == 0, result.stderr
        await asyncio.to_thread(contained.unit.kill)
        await asyncio.to_thread(contained.unit.remove)

    def raw_namespace() -> None:
        name = f"cyraw-{uuid.uuid4().hex[:8]}"
        subprocess.run(["ip", "netns", "add", name], check=True)
        subprocess.run(["ip", "netns", "delete", name], check=True)

    def our_namespace() -> None:
        key = f"bench-{uuid.uuid4()}"
        launcher.namespace(key)
        launcher.drop_namespace(key)

    starts: dict[str, list[float]] = {"limit": [], "ours": []}
    jobs: dict[str, list[float]] = {"limit": [], "ours": []}
    namespaces: dict[str, list[float]] = {"limit": [], "ours": []}
    try:
        for _ in range(ROUNDS):
            for name, side in (("limit", unconfined_start), ("ours", contained_start)):
                began = time.perf_counter()
                await side()
                starts[name].append(time.perf_counter() - began)
            for name, side in (("limit", unconfined_job), ("ours", contained_job)):
                began = time.perf_counter()
                await side()
                jobs[name].append(time.perf_counter() - began)
            for name, made in (("limit", raw_namespace), ("ours", our_namespace)):
                began = time.perf_counter()
                await asyncio.to_thread(made)
                namespaces[name].append(time.perf_counter() - began)
    finally:
        await asyncio.to_thread(launcher.drop_namespace, "bench-workspace")
    harness = __import__("bench_harness")
    for name, samples, ours, limit in (
        ("contained service start", starts, "nsenter+bwrap+setpriv, unit, relay, probe",
         "the same wrapper unconfined, probe"),
        ("contained job", jobs, "prepare, bwrap+setpriv job, unit ended", "run_job unconfined"),
        ("workspace namespace", namespaces, "namespace, route, packet rules, egress gate, dropped",
         "ip netns add + delete"),
    ):  # fmt: skip
        ours_us = sorted(samples["ours"])[ROUNDS // 2] * 1e6
        limit_us = sorted(samples["limit"])[ROUNDS // 2] * 1e6
        bench_report.add(harness.Comparison(
            name=name, ours=ours, limit=limit, ours_us=ours_us, limit_us=limit_us,
            rounds=ROUNDS, ops_per_round=1,
            notes=f"difference {(ours_us - limit_us) / 1000:.1f} ms"
            + (" (aim: 50 ms or less)" if samples is not namespaces else " (once per workspace)"),
        ))  # fmt: skip
