"""The kill suite: `clipyard up` under load while each of its processes is SIGKILLed in turn.

Workers create issues, realize their workspaces, start a runtime service and run a job in each,
and an agent runs, all through HTTP, while the five services and nats-server are killed one by one
in a seeded random order at seeded random moments (the seed is printed; ``CLIPYARD_CHAOS_SEED``
replays one). Afterwards:

- every acknowledged request's effect is there, once: its issue, its active workspace, its running
  service (one running row, serving), its succeeded job, its ended run;
- nothing is left over: every worktree and branch of the repository, every runtime service's
  process group and every port of the service range belong to something the API shows, and no
  process of the run remains;
- `clipyard replay <service> --verify` finds no difference in any of the five;
- ``WS_EVENTS`` holds every public event of every store exactly once (by ``eventId``);
- `clipyard up` still runs, every service healthy, each process restarted once;
- a request while NATS is down is answered 503 at once (the request timeout is 110 s).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from clipyard_cli.leftovers import service_groups
from clipyard_cli.runstate import read_processes, read_records
from tests.chaos.burst import Ledger, wake, work
from tests.chaos.eventcheck import STORES, public_event_ids, stream_event_ids
from tests.e2e.heartbeatutil import ENDED, create_agent, run_processes
from tests.e2e.hostfacts import alive, answers, reap, wait_until
from tests.e2e.runtimeutil import Board, finished, http_service, runtime_board, status_of
from tests.upstack import SERVICES, Up, restarts_shown, running_up

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

VICTIMS = ("nats-server", *SERVICES)
WORKERS = 4
WORKSPACES = 5
"""Workspaces each worker realizes at most."""
PORTS = (29100, 29299)
"""The stack's service ports: below the kernel's ephemeral range, where the servers other tests
keep running (NATS, PostgreSQL on a free port) may listen, so every listener here is the stack's."""
REQUEST_TIMEOUT = 110.0
"""The gateway's bus request timeout (``natsbus.context.DEFAULT_REQUEST_TIMEOUT``)."""


@dataclass
class Kills:
    """What the killer did: ``(process, pid, seconds into the burst)``, and the requests sent
    right after NATS died: ``(status, seconds)``."""

    done: list[tuple[str, int, float]] = field(default_factory=list)
    outage: list[tuple[int | None, float]] = field(default_factory=list)


def _seed() -> int:
    given = os.environ.get("CLIPYARD_CHAOS_SEED")
    seed = int(given) if given else random.SystemRandom().randrange(2**32)
    print(f"kill suite seed: {seed} (CLIPYARD_CHAOS_SEED={seed} replays it)")
    return seed


async def _outage_request(board: Board) -> tuple[int | None, float]:
    began = time.monotonic()
    try:
        answer = await board.http.get(f"/api/companies/{board.company['id']}/issues")
    except httpx.TransportError:
        return None, time.monotonic() - began
    return answer.status_code, time.monotonic() - began


def _back(home: Path, name: str, old: int) -> bool:
    """Whether `up` runs a new ``name`` that answers (its record says ``up``)."""
    record = read_records(home).get(name)
    return record is not None and record.pid not in (None, old) and record.state == "up"


async def _kill_in_turn(
    up: Up, board: Board, rng: random.Random, kills: Kills, midway: Callable[[], Awaitable[None]]
) -> None:
    began = time.monotonic()
    for number, name in enumerate(rng.sample(VICTIMS, len(VICTIMS))):
        await asyncio.sleep(rng.uniform(0.5, 3.0))
        if number == len(VICTIMS) // 2:
            await midway()
        pid = read_processes(up.home)[name]
        os.kill(pid, signal.SIGKILL)
        kills.done.append((name, pid, round(time.monotonic() - began, 2)))
        if name == "nats-server":
            kills.outage.append(await _outage_request(board))
        await wait_until(partial(_back, up.home, name, pid), 30, f"{name} up again")


async def _burst(up: Up, board: Board, agent: dict[str, Any], seed: int) -> tuple[Ledger, Kills]:
    ledger, kills, stop = Ledger(), Kills(), asyncio.Event()
    workers = [
        asyncio.create_task(work(board, ledger, n, stop, WORKSPACES)) for n in range(WORKERS)
    ]
    await wake(board, ledger, agent["id"], "chaos-first")
    assert ledger.runs, ledger.answers  # nothing was killed yet
    second = partial(wake, board, ledger, agent["id"], "chaos-midway")  # amid the killing
    try:
        await _kill_in_turn(up, board, random.Random(seed), kills, second)
    finally:
        stop.set()
        ended = await asyncio.gather(*workers, return_exceptions=True)
    failed = [e for e in ended if isinstance(e, BaseException)]
    if failed:
        raise failed[0]
    return ledger, kills


def _healthy(up: Up) -> bool:
    try:
        answer = httpx.get(f"{up.api}/health", timeout=3)
    except httpx.TransportError:
        return False
    services = answer.json().get("services", {})
    return answer.status_code == 200 and all(s["status"] == "ok" for s in services.values())


async def _settle(board: Board, ledger: Ledger) -> None:
    """Wait until the runs ended and the controls answered 202 finished."""
    for run_id in ledger.runs:

        async def ended(run_id: str = run_id) -> bool:
            read = await board.http.get(f"/api/runs/{run_id}")
            return read.status_code == 200 and read.json()["status"] in ENDED

        await wait_until(ended, 90, f"run {run_id} to end", interval=0.5)
    for operation_id, workspace_id in ledger.pending.items():
        accepted = httpx.Response(202, json={"operationId": operation_id})
        result = await finished(board, workspace_id, accepted, timeout=90)
        row = result["operation"]
        if (row.get("metadata") or {}).get("workspaceCommandKind") == "job":
            ledger.jobs[row["id"]] = workspace_id
        else:  # a start answered 202, acknowledged once it succeeded
            ledger.services.setdefault(workspace_id, {})


async def _listed(board: Board, path: str) -> list[dict[str, Any]]:
    answer = await board.http.get(path, params={"limit": 200})
    assert answer.status_code == 200, status_of(answer)
    assert not answer.headers.get("X-Clipyard-Warning"), answer.headers["X-Clipyard-Warning"]
    return list(answer.json())


def _git(repo: Path, *args: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def _listening_ports(low: int, high: int) -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            port = int(fields[1].rsplit(":", 1)[1], 16)
            if fields[3] == "0A" and low <= port <= high:  # LISTEN
                ports.add(port)
    return ports


async def _check_effects(board: Board, ledger: Ledger) -> list[dict[str, Any]]:
    """Every acknowledged effect once; returns the company's workspaces as the API lists them."""
    company = board.company["id"]
    issues = {i["id"]: i for i in await _listed(board, f"/api/companies/{company}/issues")}
    assert set(ledger.issues) <= set(issues), set(ledger.issues) - set(issues)
    titles = Counter(i["title"] for i in issues.values() if i["title"].startswith("Chaos "))
    assert [t for t, n in titles.items() if n > 1] == [], titles  # no issue created twice

    workspaces = await _listed(board, f"/api/companies/{company}/execution-workspaces")
    by_issue = Counter(w["sourceIssueId"] for w in workspaces)
    assert [i for i, n in by_issue.items() if n > 1] == [], by_issue  # no issue realized twice
    listed = {w["id"]: w for w in workspaces}
    for ws_id in ledger.workspaces:
        assert ws_id in listed, f"acknowledged workspace {ws_id} is gone"
        assert listed[ws_id]["status"] == "active", listed[ws_id]

    for ws_id, row in ledger.services.items():
        detail = (await board.detail(ws_id)).json()
        running = [
            r
            for r in detail["runtimeServices"]
            if r["workspaceCommandId"] == "service:web" and r["status"] == "running"
        ]
        assert len(running) == 1, (row, detail["runtimeServices"])
        assert row.get("id", running[0]["id"]) == running[0]["id"], (row, running)
        port = running[0]["port"]
        assert answers(port), f"the service acknowledged on port {port} is silent"

    for ws_id in {*ledger.workspaces, *ledger.jobs.values()}:
        operations = await board.operations(ws_id)
        jobs = [o for o in operations if "echo ran" in (o.get("command") or "")]
        acked = [op for op, ws in ledger.jobs.items() if ws == ws_id]
        assert set(acked) <= {o["id"] for o in jobs}, (acked, jobs)
        assert len(jobs) <= ledger.job_asks[ws_id], jobs  # none ran twice
        assert all(o["status"] == "succeeded" for o in jobs if o["id"] in acked), jobs

    for run_id in ledger.runs:
        run = (await board.http.get(f"/api/runs/{run_id}")).json()
        assert run["status"] in ENDED, run
        assert run_processes(run_id) == [], f"processes of run {run_id} are left"
    return workspaces


async def _check_host(up: Up, board: Board, workspaces: list[dict[str, Any]]) -> None:
    """Nothing on the host that the API does not show."""
    live = [w for w in workspaces if w["status"] not in ("archived", "cleanup_failed")]
    trees = {
        Path(line.split(" ", 1)[1]).resolve()
        for line in _git(board.repo, "worktree", "list", "--porcelain")
        if line.startswith("worktree ")
    }
    assert trees - {board.repo.resolve()} == {Path(w["cwd"]).resolve() for w in live}
    branches = set(_git(board.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads"))
    assert branches - {"main"} == {w["branchName"] for w in live}

    running: list[dict[str, Any]] = []
    for ws in live:
        detail = (await board.detail(ws["id"])).json()
        running += [r for r in detail["runtimeServices"] if r["status"] == "running"]
    assert {os.getpgid(r["pid"]) for r in running if alive(r["pid"])} == set(
        service_groups(up.home)
    ), running
    assert _listening_ports(*PORTS) == {r["port"] for r in running}, running


def _stored(up: Up) -> set[str]:
    stored = [i for token in STORES for i in public_event_ids(up.home, token)]
    assert len(stored) == len(set(stored)), "an eventId is used twice across the stores"
    return set(stored)


async def _check_stream(up: Up) -> None:
    """Every public event of every store in the stream exactly once, and nothing else (the stack
    still runs: the relays may still be catching up, and new events may come meanwhile)."""
    expected = _stored(up)
    seen: list[Counter[str]] = [Counter()]
    types: dict[str, str] = {}

    async def complete() -> bool:
        seen[0], read = await stream_event_ids(up.env)
        types.update(read)
        return set(seen[0]) >= expected

    try:
        await wait_until(complete, 30, "every store's public events in WS_EVENTS", interval=1)
    except AssertionError:
        missing = expected - set(seen[0])
        raise AssertionError(f"{len(missing)} events missing from the stream") from None
    assert [i for i, n in seen[0].items() if n > 1] == [], "events in the stream twice"
    foreign = set(seen[0]) - _stored(up)
    assert foreign == set(), Counter(types[i] for i in foreign)


async def test_every_process_killed_in_turn_loses_and_repeats_nothing(tmp_path: Path) -> None:
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    assert PORTS[1] < low or PORTS[0] > high, f"{PORTS} overlaps the ephemeral ports {low}-{high}"
    seed = _seed()
    with running_up(tmp_path, CLIPYARD_PORT_RANGE=f"{PORTS[0]}-{PORTS[1]}") as up:
        up.wait_healthy()
        runtime = {
            "services": [http_service("web")],
            "jobs": [{"name": "note", "command": "echo ran"}],
        }
        async with runtime_board(up.stack, tmp_path, runtime_config=runtime) as board:
            board.http.timeout = httpx.Timeout(REQUEST_TIMEOUT + 10)
            agent = await create_agent(board, "sleeper", AGENT_SLEEP="4")

            ledger, kills = await _burst(up, board, agent, seed)
            print(f"kills: {kills.done}; outage answers: {kills.outage}")
            print(f"answers: {ledger.tally()}; slowest: {ledger.slowest()}")

            # A request while NATS is down: 503 at once, nowhere near the request timeout.
            assert kills.outage, kills
            for status, seconds in kills.outage:
                assert status == 503, kills.outage
                assert seconds < 5, kills.outage
            # During the burst nothing but 2xx, 503 or a dropped connection (gateway killed),
            # and no answer took anywhere near the request timeout.
            odd = [a for a in ledger.answers if a.status not in (None, 503) and not a.acknowledged]
            assert odd == [], odd
            slowest = ledger.slowest()
            assert slowest is None or slowest.seconds < REQUEST_TIMEOUT / 4, slowest
            assert ledger.workspaces, ledger.tally()  # the burst did get work through

            await wait_until(lambda: _healthy(up), 60, "every service healthy again")
            await _settle(board, ledger)
            workspaces = await _check_effects(board, ledger)
            await _check_host(up, board, workspaces)

        for token in STORES:
            replay = up.cli("replay", token, "--verify")
            assert replay.returncode == 0, replay.stdout + replay.stderr
        await _check_stream(up)

        assert up.proc.poll() is None, up.log.read_text()
        assert _healthy(up)
        shown = up.cli("status")
        assert shown.returncode == 0, shown.stdout + shown.stderr
        restarts = restarts_shown(shown.stdout)
        assert {name: restarts[name][0] for name in VICTIMS} == dict.fromkeys(VICTIMS, 1), (
            shown.stdout
        )
        assert up.interrupt() == 0, up.log.read_text()
        # Ctrl-C still leaves nothing: no service, relay or gate, no port of the range.
        assert _listening_ports(*PORTS) == set()
        assert reap(up.home) == [], "processes of the stack outlived its Ctrl-C"
