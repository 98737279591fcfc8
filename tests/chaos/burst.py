"""The load of the kill suite: workers creating issues, realizing their workspaces, starting a
runtime service and running a job in each, then running jobs (and starting what did not start) in
those workspaces until the killing ends, through HTTP, each answer written down.

Nothing is retried: a request that got no 2xx (a 503 while a service or NATS was down, a dropped
connection while the gateway was) is recorded as unacknowledged, and the worker goes on with its
next round. What was acknowledged must be there afterwards; what was not may be there or not,
but never twice.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.e2e.runtimeutil import Board

__all__ = ["Answer", "Ledger", "wake", "work"]


@dataclass(frozen=True)
class Answer:
    """One request of the burst: what it was for, how it ended, how long it took."""

    kind: str
    status: int | None
    """The HTTP status, None when the connection failed (the gateway was down)."""
    seconds: float
    error: str = ""

    @property
    def acknowledged(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class Ledger:
    """What the burst asked for and what was acknowledged."""

    answers: list[Answer] = field(default_factory=list)
    issues: dict[str, str] = field(default_factory=dict)
    """Acknowledged issue ids -> their titles."""
    workspaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Acknowledged execution workspaces by id, as their realize answered."""
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Acknowledged service starts: workspace id -> the running row the start answered (empty for
    a start answered 202: any one running row)."""
    jobs: dict[str, str] = field(default_factory=dict)
    """Acknowledged job runs: operation id -> workspace id."""
    job_asks: Counter[str] = field(default_factory=Counter)
    """How many job runs were asked of each workspace (acknowledged or not)."""
    pending: dict[str, str] = field(default_factory=dict)
    """Controls answered 202: operation id -> workspace id (followed to their end)."""
    runs: list[str] = field(default_factory=list)
    """Acknowledged wakes' run ids."""

    def tally(self) -> dict[str, Counter[str]]:
        """Per kind, how many requests ended how (``201``, ``503``, ``connection``...)."""
        counts: dict[str, Counter[str]] = {}
        for answer in self.answers:
            counts.setdefault(answer.kind, Counter())[str(answer.status or "connection")] += 1
        return counts

    def slowest(self) -> Answer | None:
        return max(self.answers, key=lambda a: a.seconds, default=None)


async def _send(
    ledger: Ledger, kind: str, http: httpx.AsyncClient, method: str, url: str, body: Any
) -> httpx.Response | None:
    began = time.monotonic()
    try:
        answer = await http.request(method, url, json=body)
    except httpx.TransportError as exc:
        ledger.answers.append(Answer(kind, None, time.monotonic() - began, repr(exc)))
        return None
    text = "" if answer.is_success else answer.text[:300]
    ledger.answers.append(Answer(kind, answer.status_code, time.monotonic() - began, text))
    return answer if answer.is_success else None


async def _round(board: Board, ledger: Ledger, title: str) -> str | None:
    """One issue, its workspace, a service start and a job: the workspace, if realized."""
    company = board.company["id"]
    body = {"title": title, "projectId": board.project["id"], "status": "in_progress"}
    issue = await _send(
        ledger, "issue", board.http, "POST", f"/api/companies/{company}/issues", body
    )
    if issue is None:
        return None
    issue_id = issue.json()["id"]
    ledger.issues[issue_id] = title
    url = f"/api/issues/{issue_id}/execution-workspace"
    realized = await _send(ledger, "realize", board.http, "POST", url, {})
    if realized is None:
        return None
    ws = realized.json()["workspace"]
    ledger.workspaces[ws["id"]] = ws
    await _use(board, ledger, ws["id"])
    return str(ws["id"])


async def _use(board: Board, ledger: Ledger, workspace_id: str) -> bool:
    """Start its service unless a start was acknowledged, then run its job: whether every
    request was acknowledged."""
    base = f"/api/execution-workspaces/{workspace_id}"
    if workspace_id not in ledger.services:
        start = {"workspaceCommandId": "service:web"}
        url = f"{base}/runtime-services/start"
        started = await _send(ledger, "start", board.http, "POST", url, start)
        if started is None:
            return False
        _note(ledger, workspace_id, started, service=True)
    ledger.job_asks[workspace_id] += 1
    job = {"workspaceCommandId": "job:note"}
    ran = await _send(ledger, "job", board.http, "POST", f"{base}/runtime-commands/run", job)
    if ran is None:
        return False
    _note(ledger, workspace_id, ran, service=False)
    return True


def _note(ledger: Ledger, workspace_id: str, answer: httpx.Response, *, service: bool) -> None:
    body = answer.json()
    if answer.status_code == 202:
        ledger.pending[body["operationId"]] = workspace_id
    elif service:
        rows = body["workspace"]["runtimeServices"]
        web = [r for r in rows if r["workspaceCommandId"] == "service:web"]
        assert [r["status"] for r in web] == ["running"], (dict(answer.headers), body)
        ledger.services[workspace_id] = web[0]
    else:
        ledger.jobs[body["operation"]["id"]] = workspace_id


async def wake(board: Board, ledger: Ledger, agent_id: str, key: str) -> None:
    """Wake the agent (``idempotencyKey`` ``key``); an acknowledged run is followed."""
    body = {"reason": "chaos", "idempotencyKey": key}
    woken = await _send(ledger, "wake", board.http, "POST", f"/api/agents/{agent_id}/wakeup", body)
    if woken is not None:
        ledger.runs.append(woken.json()["runId"])


async def work(
    board: Board, ledger: Ledger, worker: int, stop: asyncio.Event, workspaces: int
) -> None:
    """Rounds of issue, realize, service start and job until ``workspaces`` were realized, then
    starts and jobs in those workspaces, one after the other, until ``stop`` is set (a request
    that failed is followed by a short pause)."""
    mine: list[str] = []
    attempt = 0
    while not stop.is_set():
        attempt += 1
        if len(mine) < workspaces:
            realized = await _round(board, ledger, f"Chaos w{worker} a{attempt}")
            if realized is not None:
                mine.append(realized)
                continue
        elif await _use(board, ledger, mine[attempt % len(mine)]):
            continue
        await asyncio.sleep(0.3)
