"""Issues, work products and realization over HTTP: mapping to realizer requests, filters named
in 400s, 201/200/202 for realize, nothing sent for bad input."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from contracts.base import Accepted, ErrorReply
from contracts.execution_commands import GetExecutionWorkspace, RealizeWorkspace
from contracts.workspace_commands import AddWorkProduct, CreateIssue, ListIssues, UpdateIssue

_spec = importlib.util.spec_from_file_location(
    "workspace_fixtures", Path(__file__).parent / "workspace_fixtures.py"
)
assert _spec
assert _spec.loader
wire: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wire)

Client = TestClient[Any]


def test_create_issue_maps_every_field(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.cmd.issue.create"] = wire.ok(wire.issue(company))
    body = {
        "title": "Fix login",
        "projectId": wire.PROJECT,
        "status": "todo",
        "priority": "high",
        "description": "It fails",
        "comment": "Found by QA",
        "executionWorkspaceSettings": {"mode": "isolated_workspace"},
    }
    response = client.post(f"/api/companies/{company}/issues", json=body, headers=board)
    assert response.status_code == 201, response.text
    assert response.json()["identifier"] == "ACME-1"
    command = bus.sent[0].message
    assert isinstance(command, CreateIssue)
    assert (command.company_id, command.title, command.project_id) == (
        company,
        "Fix login",
        wire.PROJECT,
    )
    assert (command.status, command.priority, command.comment) == ("todo", "high", "Found by QA")
    assert command.execution_workspace_settings.mode == "isolated_workspace"


@pytest.mark.parametrize(
    "body",
    [
        {"title": "x"},  # no project
        {"title": "x", "projectId": "p", "status": "open"},  # not a status
        {"title": "x", "projectId": "p", "priority": "urgent"},
        {"title": "x", "projectId": "p", "executionWorkspaceSettings": {"mode": "sandbox"}},
        {"title": "x", "projectId": "p", "executionWorkspaceSettings": {"moed": "inherit"}},
        {"title": "x", "projectId": "p", "labels": ["a"]},
    ],
)
def test_bad_issue_bodies_send_nothing(
    client: Client, bus: Any, company: str, board: dict[str, str], body: dict[str, Any]
) -> None:
    response = client.post(f"/api/companies/{company}/issues", json=body, headers=board)
    assert response.status_code == 400, response.text
    assert bus.sent == []


def test_list_issues_filters_and_names_unknown_statuses(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    url = f"/api/companies/{company}/issues"
    response = client.get(f"{url}?status=todo,bogus,done,later", headers=board)
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "validation_failed"
    assert "'bogus'" in error["error"]
    assert "'later'" in error["error"]
    assert error["details"]["unknown"] == ["bogus", "later"]
    assert bus.sent == []
    bus.replies["ws.qry.issue.list"] = wire.page(wire.issue(company))
    response = client.get(
        f"{url}?status=todo,in_review&projectId={wire.PROJECT}&assigneeAgentId=a1&limit=5",
        headers=board,
    )
    assert response.status_code == 200
    assert response.headers["X-Total-Count"] == "1"
    query = bus.sent[0].message
    assert isinstance(query, ListIssues)
    assert query.statuses == ["todo", "in_review"]
    assert (query.project_id, query.assignee_agent_id, query.limit) == (wire.PROJECT, "a1", 5)


def test_update_issue_distinguishes_absent_from_null(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.cmd.issue.update"] = wire.ok(wire.issue(company, status="done"))
    response = client.patch(
        f"/api/issues/{wire.ISSUE}",
        json={"status": "done", "assigneeAgentId": None},
        headers=board,
    )
    assert response.status_code == 200
    command = bus.sent[0].message
    assert isinstance(command, UpdateIssue)
    assert command.status == "done"
    assert command.assignee_agent_id is None
    assert command.title is msgspec.UNSET
    on_wire = msgspec.json.decode(msgspec.json.encode(command))
    assert on_wire["assigneeAgentId"] is None
    assert "title" not in on_wire
    assert "parentId" not in on_wire


def test_work_products_map_type_and_page(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    product = {
        "id": "w1",
        "companyId": company,
        "issueId": wire.ISSUE,
        "type": "pull_request",
        "url": "https://github.com/acme/web/pull/7",
        "createdAt": wire.NOW,
        "updatedAt": wire.NOW,
    }
    bus.replies["ws.cmd.issue.add_work_product"] = wire.ok(product)
    bus.replies["ws.qry.issue.work_products"] = wire.page(product)
    url = f"/api/issues/{wire.ISSUE}/work-products"
    response = client.post(url, json={"type": "pull_request", "url": product["url"]}, headers=board)
    assert response.status_code == 201
    command = bus.sent[0].message
    assert isinstance(command, AddWorkProduct)
    assert (command.product_type, command.url, command.metadata) == (
        "pull_request",
        product["url"],
        {},
    )
    assert client.post(url, json={"type": "tarball"}, headers=board).status_code == 400
    response = client.get(url, headers=board)
    assert response.json()[0]["type"] == "pull_request"
    assert response.headers["X-Total-Count"] == "1"
    assert len(bus.sent) == 2


def test_realize_answers_201_created_200_reused_202_running(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    url = f"/api/issues/{wire.ISSUE}/execution-workspace"
    subject = "ws.cmd.workspace.realize.local"
    result = {"workspace": wire.workspace(company), "created": True, "warnings": ["fetch failed"]}
    bus.replies[subject] = wire.ok(result)
    bus.replies["ws.qry.workspace.get"] = wire.ok(
        wire.workspace(company, deliveryState="unmerged", commitsAhead=2)
    )
    response = client.post(url, json={"mode": "isolated_workspace"}, headers=board)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["created"] is True
    assert body["warnings"] == ["fetch failed"]
    # The workspace as a GET reads it after the realize, not as the realizer recorded it.
    assert (body["workspace"]["deliveryState"], body["workspace"]["commitsAhead"]) == (
        "unmerged",
        2,
    )
    command, read = (sent.message for sent in bus.sent if "runtime_service" not in sent.subject)
    assert isinstance(command, RealizeWorkspace)
    assert (command.issue_id, command.mode) == (wire.ISSUE, "isolated_workspace")
    assert isinstance(read, GetExecutionWorkspace)
    assert (read.workspace_id, read.delivery) == (wire.WS, True)
    bus.replies[subject] = wire.ok({**result, "created": False})
    response = client.post(url, headers=board)  # no body: the issue's own settings
    assert response.status_code == 200, response.text
    assert bus.sent[-3].message.mode is None
    bus.replies[subject] = Accepted(operation_id=wire.OP)
    response = client.post(url, json={}, headers=board)
    assert response.status_code == 202
    assert response.json() == {"operationId": wire.OP, "status": "running"}


def test_a_realize_whose_workspace_cannot_be_read_after_is_answered_with_a_warning(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    result = {"workspace": wire.workspace(company), "created": True, "warnings": []}
    bus.replies["ws.cmd.workspace.realize.local"] = wire.ok(result)
    bus.replies["ws.qry.workspace.get"] = ErrorReply(code="timeout", message="slow", status=504)
    url = f"/api/issues/{wire.ISSUE}/execution-workspace"
    response = client.post(url, json={}, headers=board)
    assert response.status_code == 201, response.text  # the realize happened
    assert response.json()["workspace"]["deliveryState"] == "unknown"
    assert "could not be read after the realize" in response.headers["X-Clipyard-Warning"]


@pytest.mark.parametrize(
    "body",
    [
        {"mode": "reuse_existing"},
        {"mode": "bogus"},
        {"mode": "isolated_workspace", "branch": "x"},
    ],
)
def test_bad_realize_requests_send_nothing(
    client: Client, bus: Any, board: dict[str, str], body: dict[str, Any]
) -> None:
    response = client.post(
        f"/api/issues/{wire.ISSUE}/execution-workspace", json=body, headers=board
    )
    assert response.status_code == 400, response.text
    assert bus.sent == []


def test_realizer_errors_reach_the_client(client: Client, bus: Any, board: dict[str, str]) -> None:
    bus.replies["ws.cmd.workspace.realize.local"] = ErrorReply(
        code="low_trust_violation",
        message="This agent is untrusted: set the issue's mode to isolated_workspace.",
        status=422,
        details={"mode": "shared_workspace"},
    )
    response = client.post(f"/api/issues/{wire.ISSUE}/execution-workspace", headers=board)
    assert response.status_code == 422
    assert response.json()["code"] == "low_trust_violation"
    assert response.json()["details"] == {"mode": "shared_workspace"}
