"""The issue page (/issues/{id}) rendered from fake bus answers: the heading, the "Workspace mode"
selector (options, reuse groups, pre-selection), its PATCH, and the current workspace."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts import heartbeat_subjects
from contracts import workspace_subjects as subjects
from contracts.base import ErrorReply
from contracts.execution_commands import ListExecutionWorkspaces
from contracts.workspace_commands import UpdateIssue

_spec = importlib.util.spec_from_file_location(
    "workspace_fixtures", Path(__file__).parent.parent / "workspace_fixtures.py"
)
assert _spec
assert _spec.loader
wire: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wire)
_pages_spec = importlib.util.spec_from_file_location("pages", Path(__file__).parent / "pages.py")
assert _pages_spec
assert _pages_spec.loader
_pages: Any = importlib.util.module_from_spec(_pages_spec)
_pages_spec.loader.exec_module(_pages)
heartbeat = _pages.heartbeat

Client = TestClient[Any]
PAGE = f"/issues/{wire.ISSUE}"
PWS2 = "4f9d4a52-8e87-4a2c-9a52-5a6b7c8d9e0f"
REUSE_A = "a1111111-1111-4111-8111-111111111111"
REUSE_B = "b2222222-2222-4222-8222-222222222222"


def options(html: str) -> list[tuple[str, str, bool, str | None]]:
    """``(value, label, selected, optgroup label)`` of every option of the mode selector."""
    start = html.index('<select id="workspace-mode"')
    select = html[start : html.index("</select>", start)]
    found: list[tuple[str, str, bool, str | None]] = []
    group: str | None = None
    for match in re.finditer(
        r'<optgroup label="([^"]*)">|</optgroup>|<option value="([^"]*)"( selected)?>([^<]*)</option>',
        select,
    ):
        if match.group(0).startswith("<optgroup"):
            group = match.group(1)
        elif match.group(0) == "</optgroup>":
            group = None
        else:
            found.append((match.group(2), match.group(4), bool(match.group(3)), group))
    return found


@pytest.fixture
def signed_in(client: Client, company: str, make_board_key: Callable[[str], str]) -> Client:
    response = client.post("/sign-in", json={"key": make_board_key(company)})
    assert response.status_code == 200, response.text
    return client


@pytest.fixture
def scripted(bus: Any, company: str) -> Any:
    bus.replies[subjects.ISSUE_GET] = wire.ok(wire.issue(company))
    bus.replies[subjects.PROJECT_GET] = wire.ok(wire.project(company))
    bus.replies[subjects.PROJECT_WORKSPACE_LIST] = wire.page(
        wire.project_workspace(company), wire.project_workspace(company, id=PWS2, name="docs")
    )
    bus.replies[subjects.WORKSPACE_LIST] = wire.page(
        wire.workspace(company, id=REUSE_A, name="acme-7", branchName="acme-7"),
        wire.workspace(
            company, id=REUSE_B, name="docs-2", branchName="docs-2", projectWorkspaceId=PWS2
        ),
    )
    return bus


def test_heading_and_selector_with_the_project_default_preselected(
    signed_in: Client, scripted: Any, company: str
) -> None:
    response = signed_in.get(PAGE)
    assert response.status_code == 200, response.text
    html = response.text
    assert re.search(r"<h1>\s*ACME-1 Fix login\s*</h1>", html)
    assert '<label for="workspace-mode">Workspace mode</label>' in html
    assert options(html) == [
        ("inherit", "Project default (Isolated workspace)", True, None),
        ("shared_workspace", "Shared workspace", False, None),
        ("isolated_workspace", "Isolated workspace", False, None),
        ("operator_branch", "Operator branch", False, None),
        (f"reuse:{REUSE_A}", "acme-7 (acme-7)", False, "Reuse existing — main"),
        (f"reuse:{REUSE_B}", "docs-2 (docs-2)", False, "Reuse existing — docs"),
    ]
    (query,) = [s.message for s in scripted.sent if isinstance(s.message, ListExecutionWorkspaces)]
    assert (query.company_id, query.filters.project_id) == (company, wire.PROJECT)
    assert query.filters.reuse_eligible is True
    assert "None yet" in html
    assert 'src="/static/issue.js' in html
    assert "<script>" not in html


@pytest.mark.parametrize(
    ("override", "selected"),
    [
        ({"mode": "inherit"}, "inherit"),
        ({"mode": "operator_branch"}, "operator_branch"),
        ({"mode": "reuse_existing", "executionWorkspaceId": REUSE_B}, f"reuse:{REUSE_B}"),
    ],
)
def test_the_issue_override_is_preselected(
    signed_in: Client, scripted: Any, company: str, override: dict[str, Any], selected: str
) -> None:
    scripted.replies[subjects.ISSUE_GET] = wire.ok(
        wire.issue(company, executionWorkspaceSettings=override)
    )
    chosen = [value for value, _, on, _ in options(signed_in.get(PAGE).text) if on]
    assert chosen == [selected]


def test_a_reused_workspace_no_longer_listed_stays_selected(
    signed_in: Client, scripted: Any, company: str
) -> None:
    gone = "c3333333-3333-4333-8333-333333333333"
    scripted.replies[subjects.ISSUE_GET] = wire.ok(
        wire.issue(
            company,
            executionWorkspaceSettings={"mode": "reuse_existing", "executionWorkspaceId": gone},
            executionWorkspaceId=gone,
        )
    )
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company, id=gone, name="old"))
    html = signed_in.get(PAGE).text
    assert (f"reuse:{gone}", "Reuse existing — old", True, None) in options(html)
    assert f'<a href="/workspaces/{gone}">old</a>' in html


def test_the_current_workspace_is_linked_with_its_status(
    signed_in: Client, scripted: Any, company: str
) -> None:
    scripted.replies[subjects.ISSUE_GET] = wire.ok(
        wire.issue(company, executionWorkspaceId=wire.WS)
    )
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company, status="idle"))
    html = signed_in.get(f"{PAGE}?fragment=workspace").text.strip()
    assert html.startswith("<section")
    assert 'data-fragment="workspace"' in html
    assert f'<a href="/workspaces/{wire.WS}">acme-1</a>' in html
    assert '<span data-field="current-workspace-status">idle</span>' in html


def test_a_project_that_cannot_be_read_still_shows_the_selector(
    signed_in: Client, scripted: Any
) -> None:
    del scripted.replies[subjects.PROJECT_GET]
    html = signed_in.get(PAGE).text
    assert options(html)[0][:2] == ("inherit", "Project default (unknown)")
    assert 'class="error" role="alert">no service answers' in html


def test_choosing_a_mode_patches_the_issue_settings(
    signed_in: Client, scripted: Any, company: str
) -> None:
    """What issue.js sends for ``reuse:<id>`` reaches the realizer as the issue's settings."""
    html = signed_in.get(PAGE).text
    csrf = re.search(r'<meta name="csrf-token" content="([^"]+)">', html)
    assert csrf
    scripted.replies[subjects.ISSUE_UPDATE] = wire.ok(wire.issue(company))
    body = {
        "executionWorkspaceSettings": {"mode": "reuse_existing", "executionWorkspaceId": REUSE_A}
    }
    response = signed_in.patch(
        f"/api/issues/{wire.ISSUE}", json=body, headers={"X-CSRF-Token": csrf.group(1)}
    )
    assert response.status_code == 200, response.text
    (command,) = [s.message for s in scripted.sent if isinstance(s.message, UpdateIssue)]
    settings = command.execution_workspace_settings
    assert (settings.mode, settings.execution_workspace_id) == ("reuse_existing", REUSE_A)
    script = signed_in.get("/static/issue.js").text
    assert 'mode: "reuse_existing", executionWorkspaceId: value.slice("reuse:".length)' in script


def test_an_unknown_issue_is_not_found(signed_in: Client, bus: Any) -> None:
    bus.replies[subjects.ISSUE_GET] = ErrorReply(
        code="not_found", message="There is no issue x.", status=404
    )
    response = signed_in.get(PAGE)
    assert response.status_code == 404
    assert "There is no issue x." in response.text


def test_an_unconfined_workspace_is_marked_as_current_and_among_the_reusable(
    signed_in: Client, scripted: Any, company: str
) -> None:
    """A workspace of a ``hostTrusted`` company says so wherever the issue page shows it."""
    scripted.replies[subjects.ISSUE_GET] = wire.ok(
        wire.issue(company, executionWorkspaceId=wire.WS)
    )
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company, unconfined=True))
    scripted.replies[subjects.WORKSPACE_LIST] = wire.page(
        wire.workspace(company, id=REUSE_A, name="acme-7", branchName="acme-7", unconfined=True),
        wire.workspace(
            company, id=REUSE_B, name="docs-2", branchName="docs-2", projectWorkspaceId=PWS2
        ),
    )
    html = signed_in.get(PAGE).text
    labels = {value: label for value, label, _, _ in options(html)}
    assert labels[f"reuse:{REUSE_A}"] == "acme-7 (acme-7) — unconfined"
    assert labels[f"reuse:{REUSE_B}"] == "docs-2 (docs-2)"
    current = html.split('data-field="current-workspace">')[1].split("</p>")[0]
    assert f'<a href="/workspaces/{wire.WS}">acme-1</a> <span class="status status-unconfined"' in (
        current
    )
    assert 'title="This company is host-trusted: ' in current
    note = html.split('data-field="current-workspace-unconfined">')[1].split("</p>")[0]
    assert "its commands run as the service user on the host, outside any sandbox." in note


def test_a_confined_current_workspace_has_no_unconfined_mark(
    signed_in: Client, scripted: Any, company: str
) -> None:
    scripted.replies[subjects.ISSUE_GET] = wire.ok(
        wire.issue(company, executionWorkspaceId=wire.WS)
    )
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company))
    html = signed_in.get(f"{PAGE}?fragment=workspace").text
    assert f'<a href="/workspaces/{wire.WS}">acme-1</a>' in html
    assert "unconfined" not in html


def test_status_and_assignee_are_changed_from_the_page_with_names(
    signed_in: Client, scripted: Any, company: str
) -> None:
    scripted.replies[heartbeat_subjects.AGENT_LIST] = wire.page(heartbeat.agent(company))
    scripted.replies[heartbeat_subjects.RUN_LIST] = wire.page(heartbeat.run(company))
    assigned = wire.issue(company, assigneeAgentId=heartbeat.AGENT, status="in_progress")
    scripted.replies[subjects.ISSUE_GET] = wire.ok(assigned)
    html = signed_in.get(PAGE).text
    facts = html.split('data-fragment="facts"')[1].split("</section>")[0]
    assert '<dd data-field="issue-assignee">coder</dd>' in facts
    change = html.split("data-issue-change")[1].split("</form>")[0]
    assert '<option value="in_progress" selected>in_progress</option>' in change
    assert f'<option value="{heartbeat.AGENT}" selected>coder</option>' in change
    assert '<label for="issue-status">Status</label>' in change
    assert "Save changes" in change
    runs = html.split('data-field="issue-runs"')[1].split("</ul>")[0]
    assert f'<a href="/runs/{heartbeat.RUN}">' in runs
    # An assignee the agent list does not hold (the controller did not answer) stays selected.
    scripted.replies[heartbeat_subjects.AGENT_LIST] = ErrorReply(
        code="service_unavailable", message="no controller", status=503
    )
    kept = signed_in.get(PAGE).text.split("data-issue-change")[1].split("</form>")[0]
    assert f'<option value="{heartbeat.AGENT}" selected>{heartbeat.AGENT}</option>' in kept
    fragment = signed_in.get(f"{PAGE}?fragment=facts").text.strip()
    assert fragment.startswith("<section")
    assert 'data-field="issue-status">in_progress<' in fragment
