"""A runtime control that outlives the gateway's deadline, through HTTP: with a short
``CLIPYARD_REQUEST_TIMEOUT`` a start whose service takes longer to be ready answers 202 with an
operation, and following that operation (``runtimeutil.finished``, as the 50-start test and the
benchmarks do) ends with the service running, answering and shown on the workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.hostfacts import alive, find_server_pid, port_free
from tests.e2e.runtimeutil import HTTP_SERVER, finished, http_service, rows_of, runtime_board

pytestmark = pytest.mark.e2e

DEADLINE = 4
"""Seconds the gateway waits for a bus answer (the supervisor answers 202 half a second before)."""

SLOW = f"sleep {DEADLINE + 2}; exec {HTTP_SERVER}"
"""The issue's server, ready only after the deadline."""


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"CLIPYARD_REQUEST_TIMEOUT": str(DEADLINE)}


async def test_a_start_past_the_deadline_answers_202_and_its_operation_ends_running(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    async with runtime_board(stack, tmp_path) as board:
        _, ws = await board.realize("Slow to serve")
        slow = http_service("web", command=SLOW)
        slow["readiness"]["timeoutSec"] = 30
        await board.set_runtime(ws["id"], {"services": [slow]})
        answer = await board.control(ws["id"], "start", workspaceCommandId="service:web")
        assert answer.status_code == 202, answer.text
        assert answer.json()["status"] == "running", answer.json()
        body = await finished(board, ws["id"], answer, timeout=60, interval=0.5)
        assert body["operation"]["status"] == "succeeded", body["operation"]
        (row,) = rows_of(body["workspace"], "service:web")
        assert row["status"] == "running", row
        assert row["healthStatus"] == "healthy", row
        server = find_server_pid(row["port"])
        async with httpx.AsyncClient(timeout=5) as http:
            assert (await http.get(row["url"])).status_code == 200
        stopped = await finished(board, ws["id"], await board.control(ws["id"], "stop"))
        assert stopped["operation"]["status"] == "succeeded", stopped["operation"]
        assert not alive(server)
        assert port_free(row["port"])
