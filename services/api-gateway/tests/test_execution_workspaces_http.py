"""Execution workspaces over HTTP: list filters, archive and reopen through PATCH, close readiness,
reconcile, operations with their output, events and history."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from contracts.base import Accepted, ErrorReply, Ok
from contracts.execution_commands import (
    GetCloseReadiness,
    GetExecutionWorkspace,
    GetWorkspaceHistory,
    GetWorkspaceOperationOutput,
    ListExecutionWorkspaces,
    ListExecutionWorkspaceSummaries,
    ReconcileBranch,
    UpdateExecutionWorkspace,
)
from contracts.workspace_diff import GetWorkspaceDiff

_spec = importlib.util.spec_from_file_location(
    "workspace_fixtures", Path(__file__).parent / "workspace_fixtures.py"
)
assert _spec
assert _spec.loader
wire: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wire)

Client = TestClient[Any]
WS_URL = f"/api/execution-workspaces/{wire.WS}"


def test_list_filters_reach_the_realizer(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.workspace.list"] = wire.page(wire.workspace(company), total=3)
    url = f"/api/companies/{company}/execution-workspaces"
    response = client.get(
        f"{url}?status=active,idle&projectId=p1&projectWorkspaceId=pw1&issueId=i1"
        "&reuseEligible=true&limit=1&offset=2",
        headers=board,
    )
    assert response.status_code == 200, response.text
    assert response.headers["X-Total-Count"] == "3"
    (row,) = response.json()
    assert "deliveryState" not in row  # rows run no git
    query = bus.sent[0].message
    assert isinstance(query, ListExecutionWorkspaces)
    assert query.filters.statuses == ["active", "idle"]
    assert (query.filters.project_id, query.filters.project_workspace_id) == ("p1", "pw1")
    assert (query.filters.issue_id, query.filters.reuse_eligible) == ("i1", True)
    assert (query.limit, query.offset) == (1, 2)


def test_summary_rows_come_from_their_own_query(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    summary = {
        "id": wire.WS,
        "name": "acme-1",
        "mode": "isolated_workspace",
        "status": "idle",
        "cwd": "/w",
        "branchName": "acme-1",
        "projectWorkspaceId": wire.PWS,
        "lastUsedAt": wire.NOW,
    }
    bus.replies["ws.qry.workspace.list_summaries"] = wire.page(summary)
    response = client.get(
        f"/api/companies/{company}/execution-workspaces?summary=true", headers=board
    )
    assert response.status_code == 200
    assert response.json() == [summary | {"lastUsedAt": "2026-11-29T12:00:00Z"}]
    assert isinstance(bus.sent[0].message, ListExecutionWorkspaceSummaries)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("status=active,closed", "'closed'"),
        ("status=ARCHIVED", "'ARCHIVED'"),
        ("reuseEligible=maybe", "reuseEligible"),
        ("summary=2", "summary"),
        ("limit=500", "limit"),
    ],
)
def test_unknown_filter_values_are_400_naming_them(
    client: Client, bus: Any, company: str, board: dict[str, str], query: str, named: str
) -> None:
    response = client.get(f"/api/companies/{company}/execution-workspaces?{query}", headers=board)
    assert response.status_code == 400
    assert named in response.text
    assert bus.sent == []


def test_patch_archived_goes_to_the_node_and_close_blocked_is_409(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    subject = "ws.cmd.workspace.update.local"
    readiness = {"state": "blocked", "blockingReasons": ["linked to 1 open issue"]}
    bus.replies[subject] = ErrorReply(
        code="close_blocked",
        message="This workspace is still linked to 1 open issue.",
        status=409,
        details={"closeReadiness": readiness},
    )
    response = client.patch(WS_URL, json={"status": "archived"}, headers=board)
    assert response.status_code == 409
    assert response.json()["code"] == "close_blocked"
    assert response.json()["details"]["closeReadiness"] == readiness
    command = bus.sent[0].message
    assert isinstance(command, UpdateExecutionWorkspace)
    assert command.status == "archived"
    assert command.workspace_id == wire.WS
    assert set(msgspec.json.decode(msgspec.json.encode(command))) == {
        "type",
        "principal",
        "workspaceId",
        "status",
    }
    bus.replies[subject] = wire.ok(wire.workspace(company, status="archived"))
    bus.replies["ws.qry.workspace.get"] = wire.ok(
        wire.workspace(company, status="archived", deliveryState="merged_by_squash")
    )
    response = client.patch(WS_URL, json={"status": "archived"}, headers=board)
    # Answered as a GET reads it after the archive: with its delivery state.
    assert (response.json()["status"], response.json()["deliveryState"]) == (
        "archived",
        "merged_by_squash",
    )
    assert any(isinstance(sent.message, GetExecutionWorkspace) for sent in bus.sent)
    bus.replies[subject] = Accepted(operation_id=wire.OP)
    response = client.patch(WS_URL, json={"status": "active"}, headers=board)
    assert response.status_code == 202


def test_patch_config_is_merged_key_by_key(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.cmd.workspace.update.local"] = wire.ok(wire.workspace(company))
    response = client.patch(
        WS_URL,
        json={"config": {"teardownCommand": None, "cleanupCommand": "make clean"}},
        headers=board,
    )
    assert response.status_code == 200
    config = msgspec.json.decode(msgspec.json.encode(bus.sent[0].message))["config"]
    assert config == {"teardownCommand": None, "cleanupCommand": "make clean"}


@pytest.mark.parametrize(
    "body",
    [
        {"status": "deleted"},
        {"config": {"teardown": "x"}},
        {"config": {"workspaceRuntime": {"services": [{"name": "w"}]}}},
        {"cleanupEligibleAt": "next tuesday"},
        {"branchName": "other"},
    ],
)
def test_bad_patches_send_nothing(
    client: Client, bus: Any, board: dict[str, str], body: dict[str, Any]
) -> None:
    response = client.patch(WS_URL, json=body, headers=board)
    assert response.status_code == 400, response.text
    assert bus.sent == []


def test_close_readiness_and_detail(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.workspace.close_readiness"] = wire.ok(
        {"workspaceId": wire.WS, "state": "ready_with_warnings", "warnings": ["2 untracked files"]}
    )
    bus.replies["ws.qry.workspace.get"] = wire.ok(
        wire.workspace(company, deliveryState="merged_by_squash", commitsAhead=2)
    )
    response = client.get(f"{WS_URL}/close-readiness", headers=board)
    assert response.status_code == 200
    assert response.json()["state"] == "ready_with_warnings"
    assert response.json()["deliveryState"] == "unknown"
    assert isinstance(bus.sent[0].message, GetCloseReadiness)
    detail = client.get(WS_URL, headers=board).json()
    assert (detail["deliveryState"], detail["commitsAhead"]) == ("merged_by_squash", 2)
    assert detail["runtimeProvisioning"]["state"] == "none"


def test_the_diff_asks_the_realizer_with_the_path_and_passes_its_answer(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.workspace.diff"] = wire.ok(
        {"workspaceId": wire.WS, "available": True, "headSha": "a" * 40,
         "files": [{"path": "a.py", "status": "modified", "additions": 2, "deletions": 1}],
         "filesTotal": 1, "untracked": ["notes.md"], "untrackedTotal": 1,
         "patch": {"path": "a.py", "text": "-x\n+y\n", "totalBytes": 6}}
    )  # fmt: skip
    response = client.get(f"{WS_URL}/diff", params={"path": "a.py"}, headers=board)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["files"][0]["path"], body["untracked"], body["patch"]["text"]) == (
        "a.py", ["notes.md"], "-x\n+y\n",
    )  # fmt: skip
    asked = bus.sent[0].message
    assert isinstance(asked, GetWorkspaceDiff)
    assert (asked.workspace_id, asked.path) == (wire.WS, "a.py")
    bus.replies["ws.qry.workspace.diff"] = ErrorReply(
        code="not_found", message="'x' is not a changed or untracked file", status=404
    )
    assert client.get(f"{WS_URL}/diff", params={"path": "x"}, headers=board).status_code == 404
    too_long = client.get(f"{WS_URL}/diff", params={"path": "p" * 5000}, headers=board)
    assert too_long.status_code == 400
    assert len(bus.sent) == 2


def test_reconcile_is_board_only_and_override_needs_a_reason(
    client: Client, bus: Any, company: str, board: dict[str, str], admin: dict[str, str]
) -> None:
    url = f"{WS_URL}/reconcile-branch"
    for body in ({"mode": "override"}, {"mode": "override", "reason": "  "}, {"mode": "sideways"}):
        response = client.post(url, json=body, headers=board)
        assert response.status_code == 400, body
    assert client.post(url, json={"mode": "forward"}, headers=admin).status_code == 403
    assert bus.sent == []
    inspection = {"fromBranch": "a", "toBranch": "b", "ancestryVerdict": "ancestor"}
    bus.replies["ws.cmd.workspace.reconcile_branch.local"] = wire.ok(
        {"workspace": wire.workspace(company), "inspection": inspection}
    )
    response = client.post(url, json={"mode": "forward"}, headers=board)
    assert response.status_code == 200, response.text
    assert response.json()["rescueRef"] is None
    command = bus.sent[0].message
    assert isinstance(command, ReconcileBranch)
    assert (command.mode, command.reason) == ("forward", None)
    # A long reconcile answers 202 with its operation (never a 502).
    bus.replies["ws.cmd.workspace.reconcile_branch.local"] = Accepted(operation_id=wire.OP)
    response = client.post(url, json={"mode": "forward"}, headers=board)
    assert response.status_code == 202, response.text
    assert response.json() == {"operationId": wire.OP, "status": "running"}


def test_operations_list_detail_and_output(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.realizer.workspace_operations"] = wire.page(wire.operation(company))
    bus.replies["ws.qry.realizer.workspace_operation"] = wire.ok(
        {**wire.operation(company), "stdoutExcerpt": "Preparing worktree", "truncated": False}
    )
    bus.replies["ws.qry.realizer.workspace_operation_output"] = wire.ok(
        {"data": b"Preparing worktree\n", "offset": 5, "totalBytes": 24}
    )
    rows = client.get(f"{WS_URL}/workspace-operations", headers=board)
    assert rows.json()[0]["phase"] == "worktree_prepare"
    assert "stdoutExcerpt" not in rows.json()[0]
    detail = client.get(f"/api/workspace-operations/{wire.OP}", headers=board).json()
    assert detail["stdoutExcerpt"] == "Preparing worktree"
    output = client.get(
        f"/api/workspace-operations/{wire.OP}/output?stream=stderr&offset=5&length=100",
        headers=board,
    )
    assert output.status_code == 200
    assert output.headers["content-type"].startswith("text/plain")
    assert output.text == "Preparing worktree\n"
    assert output.headers["X-Total-Bytes"] == "24"
    query = bus.sent[-1].message
    assert isinstance(query, GetWorkspaceOperationOutput)
    assert (query.stream, query.offset, query.length) == ("stderr", 5, 100)
    sent = len(bus.sent)
    for bad in ("stream=both", "length=262145", "length=0", "offset=-1"):
        response = client.get(f"/api/workspace-operations/{wire.OP}/output?{bad}", headers=board)
        assert response.status_code == 400, bad
    assert len(bus.sent) == sent


def test_an_unknown_operation_is_404(client: Client, bus: Any, board: dict[str, str]) -> None:
    # Every source (realizer and supervisor) answers that it has none.
    for source in ("realizer", "supervisor"):
        bus.replies[f"ws.qry.{source}.workspace_operation"] = ErrorReply(
            code="not_found", message="There is no workspace operation x.", status=404
        )
    response = client.get("/api/workspace-operations/x", headers=board)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_events_and_history(client: Client, bus: Any, company: str, board: dict[str, str]) -> None:
    event = {
        "eventId": "e1",
        "type": "workspace.realized.v1",
        "source": "realizer",
        "aggregateId": wire.WS,
        "aggregateVersion": 1,
        "occurredAt": wire.NOW,
        "actor": {"type": "board", "id": "k1"},
        "data": {"branchName": "acme-1"},
    }
    bus.replies["ws.qry.realizer.workspace_events"] = wire.page(event, total=9)
    response = client.get(f"{WS_URL}/events?limit=1", headers=board)
    assert response.headers["X-Total-Count"] == "9"
    assert response.json()[0]["type"] == "workspace.realized.v1"
    for bad in ("", "?version=2&at=2026-11-29T12:00:00Z", "?version=0", "?at=yesterday"):
        assert client.get(f"{WS_URL}/history{bad}", headers=board).status_code == 400, bad
    sent = len(bus.sent)
    bus.replies["ws.qry.workspace.history"] = wire.ok(
        {"version": 2, "occurredAt": wire.NOW, "workspace": wire.workspace(company)}
    )
    response = client.get(f"{WS_URL}/history?version=2", headers=board)
    assert response.json()["version"] == 2
    query = bus.sent[sent].message
    assert isinstance(query, GetWorkspaceHistory)
    assert (query.version, query.at) == (2, None)
    response = client.get(f"{WS_URL}/history?at=2026-11-29T12:00:00Z", headers=board)
    assert response.status_code == 200
    assert bus.sent[-1].message.at is not None


def test_another_company_workspace_is_404_from_the_realizer(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.workspace.get"] = ErrorReply(
        code="not_found", message=f"There is no execution workspace {wire.WS}.", status=404
    )
    response = client.get(WS_URL, headers=board)
    assert response.status_code == 404
    assert bus.sent[0].message.principal.company_id is not None


def test_rows_of_a_node_that_does_not_answer_say_unreachable(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    rows = [wire.workspace(company, nodeId="local"), wire.workspace(company, nodeId="nodeb")]
    bus.replies["ws.qry.workspace.list"] = wire.page(*rows, total=2)
    node = {
        "instance": "runtime-supervisor-1",
        "version": "1",
        "startedAt": "2026-12-06T10:00:00Z",
        "lastSeenAt": None,
        "capacity": {
            "slots": 4,
            "portRange": "41000-41999",
            "diskFreeBytes": 1,
            "cpus": 2,
            "memoryBytes": 1,
        },
        "parts": [],
    }
    bus.replies["ws.qry.node.list"] = Ok(
        result=[
            {**node, "id": "local", "state": "ready"},
            {**node, "id": "nodeb", "state": "unreachable"},
        ]
    )
    response = client.get(f"/api/companies/{company}/execution-workspaces", headers=board)
    assert response.status_code == 200, response.text
    assert [(r["nodeId"], r["nodeState"]) for r in response.json()] == [
        ("local", "ready"),
        ("nodeb", "unreachable"),
    ]
    # Without the registry's answer, the rows are shown as they are.
    del bus.replies["ws.qry.node.list"]
    response = client.get(f"/api/companies/{company}/execution-workspaces", headers=board)
    assert [r["nodeState"] for r in response.json()] == ["ready", "ready"]
