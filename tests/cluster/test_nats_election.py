"""The NATS node leading ``WS_EVENTS`` SIGKILLed (issue 17, "a NATS node down"): nothing stops for
longer than the stream's leader election, and meanwhile runtime actions answer 503 "retry",
never 404. Each round realizes a new workspace and starts a service in it at once: the start needs
the supervisor's copy of the workspace, which comes through the stream that is electing a leader."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from contracts.subjects import EVENT_STREAM
from tests.cluster.clusterutil import Cluster, retrying
from tests.e2e.runtimeutil import Board, http_service, runtime_board, status_of

pytestmark = pytest.mark.cluster

WEB = "service:web"
WATCH = 12.0
"""Seconds of rounds after the kill (an election takes about 5 s)."""


class _Api:
    """The first gateway as ``runtime_board`` uses a stack: new clients, admin or a key."""

    def __init__(self, url: str, admin_key: str) -> None:
        self.url, self.admin_key = url, admin_key

    @property
    def admin(self) -> httpx.AsyncClient:
        return self.client(self.admin_key)

    def client(self, key: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30.0)


async def _leader(cluster: Cluster) -> str:
    """The server leading WS_EVENTS, asked as a service user ("" while there is none)."""
    nc = await cluster.stack.connect("gateway")
    try:
        info = await nc.jetstream().stream_info(EVENT_STREAM)
        return (info.cluster.leader if info.cluster else None) or ""
    finally:
        await nc.close()


async def _round(board: Board, n: int) -> tuple[int, str]:
    """A new in-progress issue's workspace realized (a 503 retried, as a client does), and a
    start of its service sent at once: (the start's status, its body)."""
    issue = await retrying(
        lambda: board.http.post(
            f"/api/companies/{board.company['id']}/issues",
            json={"title": f"round {n}", "projectId": board.project["id"], "status": "in_progress"},
        )
    )
    assert issue.status_code == 201, status_of(issue)
    realized = await retrying(
        lambda: board.http.post(f"/api/issues/{issue.json()['id']}/execution-workspace", json={})
    )
    assert realized.status_code == 201, status_of(realized)
    workspace = realized.json()["workspace"]["id"]
    answer = await board.control(workspace, "start", workspaceCommandId=WEB)
    return answer.status_code, answer.text[:300]


@contextlib.asynccontextmanager
async def _node_down(cluster: Cluster, name: str) -> AsyncIterator[float]:
    """SIGKILL the node named ``name``; yield when; start it again afterwards."""
    stack = cluster.stack
    index = next(i for i in (1, 2, 3) if stack.nats_node(i).name == name)
    await stack.stop_nats_node(index, signal.SIGKILL)
    try:
        yield time.monotonic()
    finally:
        await stack.start_nats_node(index)
        await stack.wait_ready()


async def test_runtime_actions_answer_503_never_404_while_ws_events_elects_a_leader(
    cluster: Cluster, tmp_path: Path
) -> None:
    api = _Api(cluster.stack.gateway_urls[0], cluster.stack.admin_key)
    config = {"services": [http_service("web")]}
    async with runtime_board(api, tmp_path, runtime_config=config, node_id="local") as board:
        assert (await _round(board, 0))[0] == 200  # before: a start right after a realize works
        leader = await _leader(cluster)
        assert leader, "WS_EVENTS has a leader"
        answers: list[tuple[float, int, str]] = []
        elected: float | None = None
        async with _node_down(cluster, leader) as killed:

            async def watch() -> None:
                nonlocal elected
                while elected is None:
                    with contextlib.suppress(Exception):
                        if (found := await _leader(cluster)) and found != leader:
                            elected = time.monotonic() - killed
                    await asyncio.sleep(0.1)

            watching = asyncio.create_task(watch())
            n = 0
            while time.monotonic() - killed < WATCH:
                n += 1
                status, body = await _round(board, n)
                answers.append((time.monotonic() - killed, status, body))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watching, 10.0)
            watching.cancel()
    print(f"\nWS_EVENTS leader {leader} SIGKILLed: a new leader after {elected} s")
    for at, status, body in answers:
        print(f"  start answered at {at:5.2f} s: {status} {body[:100] if status != 200 else ''}")
    assert elected is not None, "a new stream leader is elected"
    assert elected < 15.0
    assert [a for a in answers if a[1] == 404] == [], "never 404"
    refused = [a for a in answers if a[1] not in (200, 202, 503)]
    assert refused == [], refused
    assert all("retry" in body.lower() for _, status, body in answers if status == 503)
    # Nothing stops for longer than the election: a start succeeds once it is over.
    first_ok = next((at for at, status, _ in answers if status == 200), None)
    assert first_ok is not None, "a start succeeds"
    assert first_ok < elected + 5.0, (first_ok, elected)
