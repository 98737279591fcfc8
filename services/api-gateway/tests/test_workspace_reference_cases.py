"""Reference cases 35, 36, 40 and 41 (reference §10, as changed by DECISIONS 14) at the
gateway: the HTTP routes against a fake bus (pure route and filter cases; the realizer's side is
tested on real repositories in the realizer's ``tests/service/reference``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts.base import ErrorReply
from contracts.execution_commands import (
    ListExecutionWorkspaces,
    ListExecutionWorkspaceSummaries,
    UpdateExecutionWorkspace,
)

_spec = importlib.util.spec_from_file_location(
    "workspace_fixtures", Path(__file__).parent / "workspace_fixtures.py"
)
assert _spec
assert _spec.loader
wire: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wire)

Client = TestClient[Any]
WS_URL = f"/api/execution-workspaces/{wire.WS}"


def test_case35_summary_with_reuse_eligible_uses_only_the_summary_listing(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    summary = {"id": wire.WS, "name": "acme-1", "mode": "isolated_workspace", "status": "idle",
               "cwd": "/w", "branchName": "acme-1", "projectWorkspaceId": wire.PWS,
               "lastUsedAt": wire.NOW}  # fmt: skip
    bus.replies["ws.qry.workspace.list_summaries"] = wire.page(summary, total=1)
    bus.replies["ws.qry.workspace.list"] = wire.page(wire.workspace(company))
    response = client.get(
        f"/api/companies/{company}/execution-workspaces?summary=true&reuseEligible=true"
        f"&projectId={wire.PROJECT}&projectWorkspaceId={wire.PWS}&issueId={wire.ISSUE}",
        headers=board,
    )
    assert response.status_code == 200, response.text
    assert response.json() == [summary]
    assert response.headers["X-Total-Count"] == "1"
    # One query, the summary one, with the filters as given and no status filter.
    assert [sent.subject for sent in bus.sent] == ["ws.qry.workspace.list_summaries"]
    query = bus.sent[0].message
    assert isinstance(query, ListExecutionWorkspaceSummaries)
    assert query.company_id == company
    filters = query.filters
    assert (filters.project_id, filters.project_workspace_id, filters.issue_id) == (
        wire.PROJECT,
        wire.PWS,
        wire.ISSUE,
    )
    assert (filters.statuses, filters.reuse_eligible) == ([], True)
    assert (query.limit, query.offset) == (50, 0)


def test_case35_without_summary_the_full_listing_is_used(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.workspace.list"] = wire.page(wire.workspace(company))
    response = client.get(
        f"/api/companies/{company}/execution-workspaces?reuseEligible=true", headers=board
    )
    assert response.status_code == 200, response.text
    # The listing, then the node registry (for the rows' nodeState).
    assert [sent.subject for sent in bus.sent] == ["ws.qry.workspace.list", "ws.qry.node.list"]
    assert isinstance(bus.sent[0].message, ListExecutionWorkspaces)
    assert bus.sent[0].message.filters.reuse_eligible is True


def list_urls(company: str) -> list[str]:
    return [
        f"/api/companies/{company}/execution-workspaces",
        f"/api/companies/{company}/execution-workspaces?summary=true",
        f"/api/companies/{company}/projects",
        f"/api/projects/{wire.PROJECT}/workspaces",
        f"/api/companies/{company}/issues",
        f"/api/issues/{wire.ISSUE}/work-products",
        f"{WS_URL}/workspace-operations",
        f"{WS_URL}/events",
    ]


@pytest.mark.parametrize("limit", ["0", "201", "1000", "-5", "ten"])
def test_case36_limit_out_of_range_is_400_on_every_list_and_sends_nothing(
    client: Client, bus: Any, company: str, board: dict[str, str], limit: str
) -> None:
    # DECISIONS 14: 400 (not the reference's 422), naming the parameter.
    for url in list_urls(company):
        glue = "&" if "?" in url else "?"
        response = client.get(f"{url}{glue}limit={limit}", headers=board)
        assert response.status_code == 400, (url, response.text)
        assert response.json()["code"] == "validation_failed", url
        assert "limit" in response.text, url
    assert bus.sent == []


def test_case36_statuses_and_the_page_reach_the_realizer(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.workspace.list"] = wire.page(wire.workspace(company), total=40)
    response = client.get(
        f"/api/companies/{company}/execution-workspaces?status=active,idle&limit=25&offset=10",
        headers=board,
    )
    assert response.status_code == 200, response.text
    query = bus.sent[0].message
    assert (query.filters.statuses, query.limit, query.offset) == (["active", "idle"], 25, 10)
    response = client.get(f"/api/companies/{company}/execution-workspaces?limit=200", headers=board)
    assert response.status_code == 200
    (listed,) = [s for s in bus.sent[2:] if s.subject == "ws.qry.workspace.list"]
    assert listed.message.limit == 200


@pytest.mark.parametrize(
    "path",
    [
        "/api/companies/{company}/workspace-overview?status=active,idle&limit=25&offset=10",
        "/api/workspace-overview?limit=1000",
    ],
)
def test_case36_there_is_no_workspace_overview(
    client: Client, bus: Any, company: str, board: dict[str, str], path: str
) -> None:
    response = client.get(path.format(company=company), headers=board)
    assert response.status_code == 404
    assert bus.sent == []
    document = client.get("/api/openapi.json").json()
    assert not [p for p in document["paths"] if "overview" in p]


def test_case40_a_blocked_close_is_409_with_its_reason(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    reason = "This workspace is still linked to 1 open issue(s): ACME-1."
    readiness = {"state": "blocked", "blockingReasons": [reason],
                 "warnings": ["The workspace has 1 untracked file(s); a rescue ref will keep them."]}  # fmt: skip
    bus.replies["ws.cmd.workspace.update.local"] = ErrorReply(
        code="close_blocked", message=reason, status=409,
        details={"blockingReasons": [reason], "closeReadiness": readiness},
    )  # fmt: skip
    response = client.patch(WS_URL, json={"status": "archived"}, headers=board)
    assert response.status_code == 409
    body = response.json()
    assert (body["code"], body["error"]) == ("close_blocked", reason)
    assert body["details"]["closeReadiness"]["blockingReasons"] == [reason]
    # One command, the archive request itself; nothing else was asked of the realizer.
    assert len(bus.sent) == 1
    assert isinstance(bus.sent[0].message, UpdateExecutionWorkspace)


def test_case41_archive_under_the_reopen_fence_is_409(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies["ws.cmd.workspace.update.local"] = ErrorReply(
        code="reopen_pending",
        message="The workspace was reopened minutes ago; archive it later.",
        status=409,
    )
    response = client.patch(WS_URL, json={"status": "archived"}, headers=board)
    assert response.status_code == 409
    assert response.json()["code"] == "reopen_pending"
    assert len(bus.sent) == 1
