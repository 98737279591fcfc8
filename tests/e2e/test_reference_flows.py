"""The reference's guides pasted as they are written (its curls, in httpx): a wake with
``{"wakeReason": "on_demand"}``; an agent, with its run's key and ``X-Paperclip-Run-Id``, starting,
restarting and stopping the service it names ``web`` (``{"workspaceCommandId": "web"}``: its id
is ``service:web``); and its ``heartbeat-context``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.heartbeatutil import create_agent, token_of_run, wait_log, wait_run
from tests.e2e.runtimeutil import http_service, runtime_board, status_of

pytestmark = pytest.mark.e2e


async def test_the_reference_guides_curls_work_as_written(
    stack: Any, tmp_path: Path, reaper: None
) -> None:
    async with runtime_board(
        stack, tmp_path, runtime_config={"services": [http_service("web")]}
    ) as board:
        quick = await create_agent(board, "logger", AGENT_LINES="2")
        # curl -X POST $API/agents/$AGENT/wake -d '{"wakeReason":"on_demand"}'
        woken = await board.http.post(
            f"/api/agents/{quick['id']}/wake", json={"wakeReason": "on_demand"}
        )
        assert woken.status_code == 202, status_of(woken)
        run = await wait_run(board.http, woken.json()["runId"])
        assert (run["source"], run["wakeReason"], run["status"]) == (
            "on_demand", "on_demand", "succeeded",
        )  # fmt: skip

        issue = await board.http.post(
            f"/api/companies/{board.company['id']}/issues",
            json={"title": "Check the web page", "projectId": board.project["id"],
                  "status": "in_progress"},
        )  # fmt: skip
        assert issue.status_code == 201, status_of(issue)
        waiter = await create_agent(board, "sleeper", AGENT_SLEEP="60")
        accepted = await board.http.post(
            f"/api/agents/{waiter['id']}/wake",
            json={"wakeReason": "assignment", "issueId": issue.json()["id"]},
        )
        assert accepted.status_code == 202, status_of(accepted)
        run_id = accepted.json()["runId"]
        await wait_run(board.http, run_id, lambda r: r["status"] == "running", "running")
        await wait_log(board.http, run_id, "sleeper started")
        token = await token_of_run(run_id)
        running = (await board.http.get(f"/api/runs/{run_id}")).json()
        ws = running["executionWorkspaceId"]
        assert ws, running
        headers = {"Authorization": f"Bearer {token}", "X-Paperclip-Run-Id": run_id}
        async with stack.client() as agent:
            for action, status in (("start", "running"), ("restart", "running"),
                                   ("stop", "stopped")):  # fmt: skip
                # curl -X POST $API/execution-workspaces/$WS/runtime-services/$ACTION \
                #   -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $RUN" \
                #   -d '{"workspaceCommandId":"web"}'
                answer = await agent.post(
                    f"/api/execution-workspaces/{ws}/runtime-services/{action}",
                    json={"workspaceCommandId": "web"}, headers=headers, timeout=60,
                )  # fmt: skip
                assert answer.status_code == 200, (action, status_of(answer))
                (web,) = [s for s in answer.json()["workspace"]["runtimeServices"]
                          if s["serviceName"] == "web"]  # fmt: skip
                assert web["status"] == status, (action, web)
            # curl $API/issues/$ISSUE/heartbeat-context -H "Authorization: Bearer $PAPERCLIP_API_KEY"
            context = await agent.get(
                f"/api/issues/{issue.json()['id']}/heartbeat-context", headers=headers
            )
            assert context.status_code == 200, status_of(context)
            assert context.json()["currentExecutionWorkspace"]["id"] == ws
            assert context.json()["run"]["id"] == run_id
        cancelled = await board.http.post(f"/api/runs/{run_id}/cancel")
        assert cancelled.status_code == 202, status_of(cancelled)
        assert (await wait_run(board.http, run_id))["status"] == "cancelled"
