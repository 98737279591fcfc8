"""Heartbeat runs end to end through HTTP: agents with the test agent script, wakes, runs followed
to their end, the company's event stream, and the host's view of an adapter (its processes and
the run token in their environment, read from ``/proc`` as root).

Shared by ``tests/e2e/test_heartbeat_*.py`` and ``tests/bench/test_heartbeat_bench.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpx

from tests.conftest import ADMIN_KEY
from tests.e2e.agents import agent_config
from tests.e2e.hostfacts import alive, wait_until
from tests.e2e.runtimeutil import Board, status_of

__all__ = [
    "ENDED",
    "STAGES",
    "brief",
    "create_agent",
    "read_events",
    "run_processes",
    "stage_sequence",
    "token_of_run",
    "wait_log",
    "wait_run",
    "wait_stage",
    "wake",
]

STAGES = [
    "wakeup",
    "workspace_resolution",
    "slot_acquisition",
    "adapter_launch",
    "result_collection",
    "cleanup",
]
"""The six stages of a run, in order (ARCHITECTURE §4.3)."""

ENDED = frozenset({"succeeded", "failed", "cancelled", "timed_out"})
"""The statuses a run ends in."""


async def create_agent(
    board: Board,
    role: str,
    *,
    name: str | None = None,
    trust: str = "untrusted",
    timeout_sec: int = 60,
    config: dict[str, Any] | None = None,
    agent_env: dict[str, str] | None = None,
    **env: str,
) -> dict[str, Any]:
    """Create a ``process`` agent running the test agent script in ``role`` (asserted 201).

    Args:
        board: The board's client and company.
        role: The script's ``AGENT_ROLE``.
        name: The agent's name (default: the role).
        trust: ``untrusted`` or ``trusted`` (granted with the admin key after the creation).
        timeout_sec: The adapter's wall-clock timeout.
        config: A whole ``adapterConfig`` used instead of the script's.
        agent_env: ``AGENT_*`` variables given as a mapping (added to ``env``).
        **env: ``AGENT_*`` variables of the script.

    Returns:
        The agent.
    """
    body = {
        "name": name or role,
        "adapterType": "process",
        "adapterConfig": config
        or agent_config(role, timeout_sec=timeout_sec, **(agent_env or {}), **env),
    }
    answer = await board.http.post(f"/api/companies/{board.company['id']}/agents", json=body)
    assert answer.status_code == 201, status_of(answer)
    agent: dict[str, Any] = answer.json()
    if trust == "trusted":
        agent = await grant_trust(board.http, agent["id"])
    return agent


async def grant_trust(http: httpx.AsyncClient, agent_id: str) -> dict[str, Any]:
    """Make an agent trusted with the admin key (a board key may not; asserted 200)."""
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=http.base_url, headers=headers, timeout=30) as admin:
        answer = await admin.patch(f"/api/agents/{agent_id}", json={"trustLevel": "trusted"})
    assert answer.status_code == 200, status_of(answer)
    agent: dict[str, Any] = answer.json()
    return agent


async def wake(http: httpx.AsyncClient, agent_id: str, **body: Any) -> dict[str, Any]:
    """``POST /api/agents/{id}/wakeup`` (asserted 202): ``{runId, wakeupRequestId, status}``."""
    answer = await http.post(f"/api/agents/{agent_id}/wakeup", json=body)
    assert answer.status_code == 202, status_of(answer)
    accepted: dict[str, Any] = answer.json()
    return accepted


async def wait_run(
    http: httpx.AsyncClient,
    run_id: str,
    check: Callable[[dict[str, Any]], bool] = lambda run: run["status"] in ENDED,
    what: str = "the run to end",
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Poll ``GET /api/runs/{id}`` until ``check`` holds (default: the run ended); return it."""
    last: list[Any] = [None]

    async def probe() -> dict[str, Any] | None:
        answer = await http.get(f"/api/runs/{run_id}")
        assert answer.status_code == 200, status_of(answer)
        run: dict[str, Any] = answer.json()
        last[0] = run
        return run if check(run) else None

    try:
        found: dict[str, Any] = await wait_until(probe, timeout, what, interval=0.1)
    except AssertionError as error:
        raise AssertionError(f"{error}; the run was {last[0]}") from None
    return found


async def wait_stage(
    http: httpx.AsyncClient, run_id: str, stages: Iterable[str], timeout: float = 30.0
) -> dict[str, Any]:
    """Wait until the run is ``running`` in one of ``stages`` (or has ended: asserted not)."""
    wanted = set(stages)
    run = await wait_run(
        http,
        run_id,
        lambda r: r["status"] in ENDED or (r["status"] == "running" and r["stage"] in wanted),
        f"the run running in {sorted(wanted)}",
        timeout,
    )
    assert run["status"] == "running", run
    return run


async def wait_log(http: httpx.AsyncClient, run_id: str, text: str, timeout: float = 30.0) -> str:
    """Poll the run's log (``GET /api/runs/{id}/log``) until it holds ``text``; return it."""

    async def probe() -> str | None:
        answer = await http.get(f"/api/runs/{run_id}/log")
        if answer.status_code == 404:
            return None
        assert answer.status_code == 200, status_of(answer)
        return answer.text if text in answer.text else None

    log: str = await wait_until(probe, timeout, f"{text!r} in the log of run {run_id}")
    return log


async def read_events(
    http: httpx.AsyncClient,
    company_id: str,
    done: Callable[[list[dict[str, Any]]], bool],
    *,
    types: Iterable[str] = (),
    timeout: float = 20.0,
) -> list[dict[str, Any]]:
    """The company's events from the stream's start (``Last-Event-ID: 0``), read until ``done``
    holds for what was read (each event: the published envelope, ``_sequence`` added).

    Raises:
        AssertionError: ``done`` never held within ``timeout`` (the events read are shown).
    """
    events: list[dict[str, Any]] = []
    params = {"types": ",".join(types)} if types else {}

    async def follow() -> None:
        async with http.stream(
            "GET",
            f"/api/companies/{company_id}/events/stream",
            params=params,
            headers={"Last-Event-ID": "0", "Accept": "text/event-stream"},
            timeout=httpx.Timeout(timeout + 5),
        ) as answer:
            assert answer.status_code == 200, answer.status_code
            sequence, data = None, []
            async for line in answer.aiter_lines():
                if line.startswith("id:"):
                    sequence = int(line[3:].strip())
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif line == "" and data:
                    event = json.loads("\n".join(data))
                    event["_sequence"] = sequence
                    events.append(event)
                    data = []
                    if done(events):
                        return

    try:
        await asyncio.wait_for(follow(), timeout)
    except TimeoutError:
        shown = [(e.get("type"), e.get("aggregateId"), e.get("stage")) for e in events]
        raise AssertionError(f"waited {timeout:.0f} s for events; read {shown}") from None
    return events


def stage_sequence(events: Iterable[dict[str, Any]], run_id: str) -> list[str]:
    """The stages a run entered, in stream order: ``wakeup`` with its ``run.queued.v1`` (the
    contract's event of that stage), then each ``run.stage_changed.v1``'s stage. A stage change
    whose ``previousStage`` is not the stage before it is shown as ``<previous>?->stage``."""
    stages: list[str] = []
    for e in events:
        if e.get("aggregateId") != run_id:
            continue
        if e.get("type") == "run.queued.v1":
            stages.append("wakeup")
        elif e.get("type") == "run.stage_changed.v1":
            previous = e.get("previousStage")
            if stages and previous != stages[-1]:
                stages.append(f"{previous}?->{e['stage']}")
            else:
                stages.append(e["stage"])
    return stages


def brief(run: dict[str, Any]) -> str:
    """A run's outcome for an assertion message (status, stage, error, exit, log tails)."""
    keys = ("status", "stage", "errorCode", "error", "exitCode", "signal")
    head = ", ".join(f"{k}={run.get(k)!r}" for k in keys)
    tails = {k: (run.get(k) or "")[-600:] for k in ("stdoutExcerpt", "stderrExcerpt")}
    return f"run {run.get('id')}: {head}; {tails}"


def _environ(pid: int) -> dict[bytes, bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = handle.read()
    except OSError:
        return {}
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def run_processes(run_id: str) -> list[int]:
    """Live processes whose environment names the run (``CLIPYARD_RUN_ID``): its adapter and
    whatever the adapter started, wherever they went (another group or session)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        if _environ(int(name)).get(b"CLIPYARD_RUN_ID") == run_id.encode() and alive(int(name)):
            found.append(int(name))
    return found


async def token_of_run(run_id: str, timeout: float = 20.0) -> str:
    """The run token the adapter of ``run_id`` received, read from its environment in ``/proc``
    (root reads any process's), with ``PAPERCLIP_API_KEY`` checked to equal it."""

    def probe() -> str | None:
        for pid in run_processes(run_id):
            env = _environ(pid)
            token = env.get(b"CLIPYARD_API_KEY")
            if token:
                assert env.get(b"PAPERCLIP_API_KEY") == token, f"pid {pid}: alias differs"
                return token.decode()
        return None

    token: str = await wait_until(probe, timeout, f"an adapter process of run {run_id}")
    return token


def elapsed_since(start: float) -> float:
    """Seconds of ``time.monotonic()`` since ``start``."""
    return time.monotonic() - start
