"""``/issues`` and ``/runs``: the API's list queries rendered, with names looked up best effort."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts import heartbeat_subjects, workspace_subjects
from contracts.agents import ListRuns
from contracts.base import ErrorReply
from contracts.workspace_commands import ListIssues

_spec = importlib.util.spec_from_file_location("pages", Path(__file__).parent / "pages.py")
assert _spec
assert _spec.loader
pages: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pages)
wire, heartbeat = pages.wire, pages.heartbeat

Client = TestClient[Any]


@pytest.fixture
def signed_in(
    client: Client, company: str, make_board_key: Callable[[str], str], bus: Any
) -> Client:
    pages.sign_in(client, make_board_key(company), bus)
    return client


def _sent(bus: Any, kind: type) -> list[Any]:
    return [s.message for s in bus.sent if isinstance(s.message, kind)]


def test_issues_are_listed_with_links_assignees_and_workspaces(
    signed_in: Client, bus: Any, company: str
) -> None:
    bus.replies[workspace_subjects.ISSUE_LIST] = wire.page(
        wire.issue(company, assigneeAgentId=heartbeat.AGENT, executionWorkspaceId=wire.WS),
        wire.issue(company, id="i2", identifier="ACME-2", title="<b>Bold</b>", status="done"),
    )
    bus.replies[heartbeat_subjects.AGENT_LIST] = wire.page(heartbeat.agent(company))
    bus.replies[workspace_subjects.WORKSPACE_LIST_SUMMARIES] = wire.page(
        {
            "id": wire.WS,
            "name": "acme-1",
            "mode": "isolated_workspace",
            "status": "active",
            "cwd": "/srv",
            "branchName": "acme-1",
            "projectWorkspaceId": None,
            "lastUsedAt": wire.NOW,
        }
    )
    response = signed_in.get("/issues?status=todo,done")
    assert response.status_code == 200
    html = response.text
    assert "<caption>Issues</caption>" in html
    assert f'<a href="/issues/{wire.ISSUE}">ACME-1</a>' in html
    assert f'<a href="/issues/{wire.ISSUE}">Fix login</a>' in html
    assert ">coder<" in html  # the assignee's name, not its id
    assert f'<a href="/workspaces/{wire.WS}">acme-1</a>' in html
    assert "&lt;b&gt;Bold&lt;/b&gt;" in html  # autoescaped
    assert "<b>Bold</b>" not in html
    assert 'href="/issues" aria-current="page"' in html
    (query,) = _sent(bus, ListIssues)[-1:]
    assert (query.company_id, query.statuses) == (company, ["todo", "done"])


def test_the_issue_list_renders_when_names_cannot_be_looked_up(
    signed_in: Client, bus: Any, company: str
) -> None:
    bus.replies[workspace_subjects.ISSUE_LIST] = wire.page(
        wire.issue(company, assigneeAgentId=heartbeat.AGENT)
    )
    bus.replies[heartbeat_subjects.AGENT_LIST] = ErrorReply(
        code="service_unavailable", message="down", status=503
    )
    response = signed_in.get("/issues")
    assert response.status_code == 200
    assert heartbeat.AGENT in response.text
    rows = signed_in.get("/issues?fragment=rows").text.strip()
    assert rows.startswith('<tbody data-fragment="rows"')
    assert "<nav" not in rows


def test_the_new_issue_form_offers_the_projects_agents_and_statuses(
    signed_in: Client, bus: Any, company: str
) -> None:
    bus.replies[workspace_subjects.PROJECT_LIST] = wire.page(wire.project(company))
    bus.replies[heartbeat_subjects.AGENT_LIST] = wire.page(heartbeat.agent(company))
    html = signed_in.get("/issues").text
    form = html.split("data-new-issue")[1].split("</form>")[0]
    assert '<label for="new-issue-title">Title</label>' in form
    assert f'<option value="{wire.PROJECT}">' in form
    assert '<option value="">Unassigned</option>' in form
    assert f'<option value="{heartbeat.AGENT}">coder</option>' in form
    assert '<option value="todo" selected>todo</option>' in form
    assert "issue_forms.js" in html
    bus.replies[workspace_subjects.PROJECT_LIST] = wire.page()
    assert "Create a project first" in signed_in.get("/issues").text


def test_runs_are_listed_with_agent_issue_and_error(
    signed_in: Client, bus: Any, company: str
) -> None:
    bus.replies[heartbeat_subjects.RUN_LIST] = wire.page(
        heartbeat.run(company, status="failed", errorCode="adapter_exit", finishedAt=wire.NOW)
    )
    bus.replies[heartbeat_subjects.AGENT_LIST] = wire.page(heartbeat.agent(company))
    bus.replies[workspace_subjects.ISSUE_LIST] = wire.page(wire.issue(company))
    response = signed_in.get("/runs?status=failed")
    assert response.status_code == 200
    html = response.text
    assert "<caption>Runs</caption>" in html
    for header in ("Agent", "Issue", "Status", "Stage", "Started", "Finished", "Error code"):
        assert f'<th scope="col">{header}</th>' in html
    row = html.split(f'<tr data-run-id="{heartbeat.RUN}">')[1].split("</tr>")[0]
    assert f'href="/runs/{heartbeat.RUN}"' in row
    assert ">coder<" in row
    assert f'<a href="/issues/{wire.ISSUE}">ACME-1</a>' in row
    assert "<code>adapter_exit</code>" in row
    assert "adapter_launch" in row
    live = html.split('data-live-fragment="rows"')[0].rsplit("<table", 1)[1]
    assert "run.queued.v1" in live
    assert "run.finished.v1" in live
    (query,) = _sent(bus, ListRuns)[-1:]
    assert query.filters.status == "failed"
    assert query.principal.company_id == company


def test_an_unknown_run_status_is_refused(signed_in: Client, bus: Any) -> None:
    response = signed_in.get("/runs?status=exploded")
    assert response.status_code == 400
    assert "Unknown status value" in response.text
    assert response.headers["content-type"].startswith("text/html")
