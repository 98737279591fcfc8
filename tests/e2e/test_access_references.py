"""References stay inside the company, through HTTP on the running stack (ARCHITECTURE §5.1).

Company B's board names company A's things in the bodies of its own requests: an issue's
``projectId``, ``projectWorkspaceId``, ``parentId``, ``assigneeAgentId`` and reused workspace
(``executionWorkspaceSettings.executionWorkspaceId``), an agent key's ``agentId``, a wake's
``issueId``. Each answers 404 ``not_found`` naming the field in ``details.field``, and nothing is
stored. The same bodies with B's own ids pass, and an agent assigned the moment it is created is
found (the realizer's copy of agents may lag; it asks the controller).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.heartbeatutil import create_agent
from tests.e2e.runtimeutil import Board, runtime_board, status_of

pytestmark = pytest.mark.e2e


def _refused(answer: httpx.Response, field: str) -> str | None:
    """None if ``answer`` is the 404 naming ``field``; else what it was."""
    if answer.status_code != 404:
        return f"{field}: {status_of(answer)[:300]}"
    body = answer.json()
    if body.get("code") != "not_found" or body.get("details", {}).get("field") != field:
        return f"{field}: 404 without details.field {field!r}: {body}"
    if field.split(".")[-1] not in body.get("error", ""):
        return f"{field}: the message does not name the field: {body['error']}"
    return None


async def _issues(board: Board) -> list[str]:
    answer = await board.http.get(
        f"/api/companies/{board.company['id']}/issues", params={"limit": 200}
    )
    assert answer.status_code == 200, status_of(answer)
    return sorted(i["id"] for i in answer.json())


@pytest.mark.both_stores
async def test_ids_of_another_company_in_a_body_are_not_found_and_store_nothing(
    stack: Any, tmp_path: Path
) -> None:
    async with (
        runtime_board(stack, tmp_path, name="Acme") as a,
        runtime_board(stack, tmp_path, name="Bravo") as b,
    ):
        agent_a = await create_agent(a, "sleeper", name="A's agent")
        issue_a, workspace_a = await a.realize("A's work")
        _, workspace_b = await b.realize("B's work")
        issue_b = (await _issues(b))[0]
        before = await _issues(b)
        issues_b = f"/api/companies/{b.company['id']}/issues"
        own = {"title": "B's", "projectId": b.project["id"]}
        reuse = {"mode": "reuse_existing", "executionWorkspaceId": workspace_a["id"]}
        creates = {
            "projectId": {**own, "projectId": a.project["id"]},
            "projectWorkspaceId": {**own, "projectWorkspaceId": a.project_workspace["id"]},
            "parentId": {**own, "parentId": issue_a["id"]},
            "assigneeAgentId": {**own, "assigneeAgentId": agent_a["id"]},
            "executionWorkspaceSettings.executionWorkspaceId": {
                **own, "executionWorkspaceSettings": reuse,
            },
        }  # fmt: skip
        problems = [
            _refused(await b.http.post(issues_b, json=body), field)
            for field, body in creates.items()
        ]
        problems.append(_refused(await b.http.post(issues_b, json={**own, "assigneeAgentId":
                                                                   str(uuid.uuid4())}),
                                 "assigneeAgentId"))  # fmt: skip
        updates = {
            "assigneeAgentId": {"assigneeAgentId": agent_a["id"]},
            "parentId": {"parentId": issue_a["id"]},
            "projectWorkspaceId": {"projectWorkspaceId": a.project_workspace["id"]},
            "executionWorkspaceSettings.executionWorkspaceId": {
                "executionWorkspaceSettings": reuse
            },
        }
        problems += [
            _refused(await b.http.patch(f"/api/issues/{issue_b}", json=body), field)
            for field, body in updates.items()
        ]
        key = await b.http.post(
            f"/api/companies/{b.company['id']}/api-keys",
            json={"name": "stolen", "kind": "agent", "agentId": agent_a["id"]},
        )
        problems.append(_refused(key, "agentId"))
        agent_b = await create_agent(b, "sleeper", name="B's agent", AGENT_SLEEP="0")
        woken = await b.http.post(
            f"/api/agents/{agent_b['id']}/wakeup",
            json={"source": "on_demand", "issueId": issue_a["id"], "reason": "steal"},
        )
        problems.append(_refused(woken, "issueId"))
        found = [p for p in problems if p]
        assert not found, "\n".join(found)
        assert await _issues(b) == before, "a refused body stored an issue"
        detail = (await b.http.get(f"/api/issues/{issue_b}")).json()
        assert detail.get("assigneeAgentId") is None, detail
        assert detail.get("parentId") is None, detail

        # B's own ids pass, an agent assigned right after its creation included.
        fresh = await create_agent(b, "sleeper", name="B's newest", AGENT_SLEEP="0")
        created = await b.http.post(issues_b, json={
            **own, "status": "backlog", "assigneeAgentId": fresh["id"],
            "projectWorkspaceId": b.project_workspace["id"], "parentId": issue_b,
            "executionWorkspaceSettings": {"mode": "reuse_existing",
                                           "executionWorkspaceId": workspace_b["id"]},
        })  # fmt: skip
        assert created.status_code == 201, status_of(created)
