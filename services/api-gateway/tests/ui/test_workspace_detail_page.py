"""The workspace detail page (/workspaces/{id}) rendered from fake bus answers: every section,
its fragments, the controls the browser tests rely on, and no inline script (CSP)."""

from __future__ import annotations

import importlib.util
import re
import uuid
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts import heartbeat_subjects
from contracts import workspace_subjects as subjects
from contracts.agents import ListRuns
from contracts.base import ErrorReply
from contracts.execution_commands import GetWorkspaceOperation
from contracts.runtime_commands import GetRuntimeServiceLog
from contracts.runtime_subjects import RUNTIME_LOG, RUNTIME_STATE

_spec = importlib.util.spec_from_file_location(
    "runtime_fixtures", Path(__file__).parent.parent / "runtime_fixtures.py"
)
assert _spec
assert _spec.loader
rt: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)
wire = rt.wire

Client = TestClient[Any]
PAGE = f"/workspaces/{wire.WS}"
JOB_OP = "5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
EVENT = "4c0d1e2f-3a4b-4c5d-8e6f-708192a3b4c5"
RUNTIME = {
    "services": [{"name": "web", "command": "python3 -m http.server", "port": {"type": "auto"}}],
    "jobs": [{"name": "hello", "command": "echo hello"}],
}


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    return tags


def between(html: str, start: str, end: str = "</section>") -> str:
    """The HTML from ``start`` up to the next ``end``."""
    at = html.index(start)
    return html[at : html.index(end, at)]


def readiness(company: str, **changes: Any) -> dict[str, Any]:
    return {
        "workspaceId": wire.WS,
        "state": "blocked",
        "blockingReasons": ["Branch acme-1 has 2 commits not merged into main."],
        "warnings": ["The worktree has 1 untracked file."],
        "plannedActions": [
            {"kind": "stop_runtime_services", "label": "Stop runtime services"},
            {
                "kind": "git_worktree_remove",
                "label": "Remove the worktree",
                "command": "git worktree remove",
            },
        ],
        "deliveryState": "unmerged",
        "commitsAhead": 2,
        **changes,
    }


def event(**changes: Any) -> dict[str, Any]:
    return {
        "eventId": EVENT,
        "type": "workspace.realized.v1",
        "source": "realizer",
        "aggregateId": wire.WS,
        "aggregateVersion": 1,
        "occurredAt": wire.NOW,
        "actor": {"type": "board", "id": "key-1"},
        "runId": rt.RUN,
        "reason": "issue ACME-1 started",
        "data": {},
        **changes,
    }


def run(company: str, **changes: Any) -> dict[str, Any]:
    return {
        "id": rt.RUN,
        "companyId": company,
        "agentId": "a1b2c3d4-0000-4000-8000-000000000001",
        "issueId": wire.ISSUE,
        "executionWorkspaceId": wire.WS,
        "wakeupRequestId": None,
        "source": "on_demand",
        "wakeReason": None,
        "status": "succeeded",
        "stage": "cleanup",
        "queuedAt": wire.NOW,
        "startedAt": wire.NOW,
        "finishedAt": wire.NOW,
        "exitCode": 0,
        "signal": None,
        "errorCode": None,
        "error": None,
        "stdoutExcerpt": None,
        "stderrExcerpt": None,
        "usage": None,
        "result": None,
        "logBytes": None,
        "coalescedCount": 0,
        "cancelRequested": False,
        "createdAt": wire.NOW,
        "updatedAt": wire.NOW,
        **changes,
    }


def job_operation(company: str, **changes: Any) -> dict[str, Any]:
    metadata = {"workspaceCommandKind": "job", "workspaceCommandId": "job:hello",
                "workspaceCommandName": "hello", "label": 'Workspace job "hello"'}  # fmt: skip
    job = {"id": JOB_OP, "command": "echo hello", "exitCode": 0, "metadata": metadata}
    return rt.sup_operation(company, **(job | changes))


@pytest.fixture
def signed_in(client: Client, company: str, make_board_key: Callable[[str], str]) -> Client:
    """The client with a page session of ``company`` (signed in through /sign-in)."""
    response = client.post("/sign-in", json={"key": make_board_key(company)})
    assert response.status_code == 200, response.text
    return client


@pytest.fixture
def scripted(bus: Any, company: str) -> Any:
    """Every service answers the page's questions about the workspace."""
    config = {"provisionCommand": "make setup", "workspaceRuntime": RUNTIME}
    bus.replies[subjects.WORKSPACE_GET] = wire.ok(
        wire.workspace(
            company,
            config=config,
            linkedIssueIds=[wire.ISSUE],
            rescueRefs=[{"ref": f"refs/clipyard/rescue/{wire.WS}/1", "sha": "ab" * 20,
                         "fileCount": 3, "generation": 1, "createdAt": wire.NOW}],
        )
    )  # fmt: skip
    bus.replies[RUNTIME_STATE] = wire.ok(rt.state(company))
    bus.replies[subjects.WORKSPACE_CLOSE_READINESS] = wire.ok(readiness(company))
    bus.replies[subjects.WORKSPACE_DIFF] = wire.ok(DIFF)
    bus.replies[subjects.workspace_operations("realizer")] = wire.page(wire.operation(company))
    bus.replies[subjects.workspace_operations("supervisor")] = wire.page(job_operation(company))
    detail = job_operation(company, stdoutExcerpt="hello\n", stderrExcerpt="", truncated=False)
    bus.replies[subjects.workspace_operation("realizer")] = ErrorReply(
        code="not_found", message="no such operation", status=404
    )
    bus.replies[subjects.workspace_operation("supervisor")] = wire.ok(detail)
    bus.replies[subjects.workspace_events("realizer")] = wire.page(event())
    bus.replies[subjects.workspace_events("supervisor")] = wire.page(
        event(
            eventId="5e1f2a3b-4c5d-4e6f-8a7b-8c9d0e1f2a3b",
            type="runtime_service.started.v1",
            source="supervisor",
            aggregateId=rt.SERVICE,
            occurredAt="2026-11-29T12:00:05Z",
            actor={"type": "system", "id": "runtime-supervisor"},
            runId=None,
            reason=None,
        )
    )
    bus.replies[RUNTIME_LOG] = wire.ok({"text": "Serving HTTP on 127.0.0.1\n", "offset": 0,
                                        "length": 26, "size": 26})  # fmt: skip
    bus.replies[heartbeat_subjects.RUN_LIST] = wire.page(
        run(company),
        run(company, id="6f7a8b9c-0d1e-4f2a-8b3c-4d5e6f7a8b9c", executionWorkspaceId=None),
    )
    return bus


DIFF = {
    "workspaceId": wire.WS, "available": True, "baseRef": "origin/main", "mergeBase": "c" * 40,
    "headSha": "d" * 40, "commitsTotal": 2, "filesTotal": 2, "additions": 7, "deletions": 1,
    "commits": [
        {"sha": "e" * 40, "subject": "Document login", "authorName": "Ada", "committedAt": wire.NOW},
        {"sha": "f" * 40, "subject": "Add login", "authorName": "Ada", "committedAt": wire.NOW},
    ],
    "files": [
        {"path": "login.py", "status": "added", "additions": 6, "deletions": 0},
        {"path": "logo.png", "status": "modified", "binary": True},
        {"path": "notes/new name.md", "status": "renamed", "oldPath": "notes/old.md",
         "additions": 1, "deletions": 1},
    ],
    "untracked": ["scratch.txt"], "untrackedTotal": 1,
}  # fmt: skip


def test_the_changes_section_lists_commits_files_and_untracked_and_shows_a_files_diff(
    signed_in: Client, scripted: Any
) -> None:
    html = between(signed_in.get(PAGE).text, 'data-fragment="diff"')
    assert "2 commits, 2 changed files (+7 \u22121), 1 untracked." in " ".join(
        re.sub(r"<[^>]+>", "", html).split()
    )
    assert "Document login" in html
    assert "Add login" in html
    assert '<a href="?diffPath=login.py#section-diff">login.py</a>' in html
    assert '?diffPath=notes/new%20name.md#section-diff">notes/new name.md</a>' in html
    assert "(from notes/old.md)" in html
    assert "binary" in html
    assert '<a href="?diffPath=scratch.txt#section-diff">scratch.txt</a>' in html
    patch = {"path": "login.py", "text": "--- /dev/null\n+++ b/login.py\n@@ -0,0 +1 @@\n+ok\n",
             "totalBytes": 50}  # fmt: skip
    scripted.replies[subjects.WORKSPACE_DIFF] = wire.ok({**DIFF, "patch": patch})
    shown = between(signed_in.get(f"{PAGE}?diffPath=login.py").text, 'data-fragment="diff"')
    assert '<span class="diff-add">+ok</span>' in shown
    assert '<span class="diff-hunk">@@ -0,0 +1 @@</span>' in shown
    asked = [m.message for m in scripted.sent if m.subject == subjects.WORKSPACE_DIFF]
    assert asked[-1].path == "login.py"
    # "Refresh" without the page's script: the same page again, from git.
    assert 'href="?diffPath=login.py&amp;refresh#section-diff" data-diff-refresh' in shown
    assert signed_in.get(f"{PAGE}?diffPath=login.py&refresh").status_code == 200


def test_a_diff_path_the_diff_does_not_list_shows_why_and_the_lists(
    signed_in: Client, scripted: Any
) -> None:
    refused = ErrorReply(code="not_found", message="'nope' is not a changed file", status=404)
    answers = iter([refused, wire.ok(DIFF)])
    scripted.replies[subjects.WORKSPACE_DIFF] = lambda message: next(answers)
    html = between(signed_in.get(f"{PAGE}?diffPath=nope").text, 'data-fragment="diff"')
    assert "&#39;nope&#39; is not a changed file" in html
    assert "could not be loaded" not in html
    assert "login.py" in html


def test_a_workspace_with_nothing_to_compare_says_why(signed_in: Client, scripted: Any) -> None:
    scripted.replies[subjects.WORKSPACE_DIFF] = wire.ok(
        {"workspaceId": wire.WS, "available": False, "reason": "its worktree is no longer on disk"}
    )
    html = between(signed_in.get(f"{PAGE}?fragment=diff").text, 'data-fragment="diff"')
    assert "Nothing to compare: its worktree is no longer on disk." in html


def test_without_a_session_the_page_redirects_to_sign_in(client: Client) -> None:
    response = client.get(PAGE, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/sign-in"


def test_every_section_renders_from_the_bus_answers(signed_in: Client, scripted: Any) -> None:
    response = signed_in.get(PAGE)
    assert response.status_code == 200, response.text
    html = response.text
    tags = parse(html)
    headings = [a.get("id") for t, a in tags.tags if t == "h2"]
    for name in ("summary", "readiness", "diff", "services", "jobs", "configuration",
                 "operations", "lifecycle", "timeline", "runs"):  # fmt: skip
        assert f"{name}-heading" in headings
        assert f'aria-labelledby="{name}-heading" data-fragment="{name}"' in html
    assert re.search(r"<h1>\s*acme-1\s*</h1>", html)
    summary = between(html, 'data-fragment="summary"')
    assert '<dd data-field="status">active</dd>' in summary
    assert '<dd data-field="deliveryState">unknown</dd>' in summary
    assert '<dd data-field="commitsAhead">unknown</dd>' in summary
    ready = between(html, 'data-fragment="readiness"')
    assert "blocked" in ready
    assert "2 commits not merged" in ready
    assert "1 untracked file" in ready
    assert "Remove the worktree" in ready
    assert "<code>git worktree remove</code>" in ready


def test_runtime_services_table_has_controls_url_health_and_log(
    signed_in: Client, scripted: Any
) -> None:
    html = between(signed_in.get(PAGE).text, 'data-fragment="services"')
    assert "<caption>Runtime services</caption>" in html
    assert '<td data-field="service-status">running' in html
    assert '<a href="http://127.0.0.1:41007/"' in html
    assert '<td data-field="service-health">healthy</td>' in html
    assert '<td data-field="service-port">41007</td>' in html
    for label in (
        "Start web",
        "Stop web",
        "Restart web",
        "Start all services",
        "Stop all services",
    ):
        assert f">{label}</button>" in html
    assert 'data-runtime-action="start" data-service-index="0"' in html
    assert "<summary>Show log</summary>" in html
    assert "Serving HTTP on 127.0.0.1" in html
    assert "Runtime provisioning: <strong>provisioned</strong>" in html
    (log_query,) = [s.message for s in scripted.sent if isinstance(s.message, GetRuntimeServiceLog)]
    assert (log_query.service_id, log_query.tail) == (rt.SERVICE, 40)


def test_jobs_show_a_run_button_and_the_last_run_output(signed_in: Client, scripted: Any) -> None:
    html = between(signed_in.get(PAGE).text, 'data-fragment="jobs"')
    assert 'data-run-job="job:hello"' in html
    assert ">Run hello</button>" in html
    assert (
        '<pre class="log" tabindex="0" aria-labelledby="job-output-heading" data-field="job-output">hello\n</pre>'
        in html
    )
    assert '<dd data-field="job-exit-code">0</dd>' in html
    asked = [s.message for s in scripted.sent if isinstance(s.message, GetWorkspaceOperation)]
    assert {one.operation_id for one in asked} == {JOB_OP}


def test_jobs_fragment_shows_the_operation_asked_for(signed_in: Client, scripted: Any) -> None:
    other = "0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d"
    response = signed_in.get(f"{PAGE}?fragment=jobs&operationId={other}")
    assert response.status_code == 200
    asked = [s.message for s in scripted.sent if isinstance(s.message, GetWorkspaceOperation)]
    assert {one.operation_id for one in asked} == {other}


def test_configuration_form_is_labelled_and_filled(signed_in: Client, scripted: Any) -> None:
    html = between(signed_in.get(PAGE).text, 'data-fragment="configuration"')
    tags = parse(html)
    labels = {a["for"] for t, a in tags.tags if t == "label"}
    controls = {a["id"]: a for t, a in tags.tags if t in ("input", "textarea")}
    assert labels == set(controls)
    for text in ("Provision command", "Runtime provision command", "Teardown command",
                 "Cleanup command", "Runtime config (JSON)"):  # fmt: skip
        assert f">{text}</label>" in html
    assert controls["config-provision"]["value"] == "make setup"
    # The API's field names map onto the controls (actions.js: the longest prefix wins).
    assert controls["workspaceRuntime"]["data-api-field"] == "config.workspaceRuntime"
    assert controls["workspaceRuntime"]["name"] == "runtimeConfig"  # the realizer's name
    assert controls["config-teardown"]["data-api-field"] == "config.teardownCommand"
    assert "&#34;command&#34;: &#34;echo hello&#34;" in html or "&quot;command&quot;" in html
    assert ">Save configuration</button>" in html


def test_operations_lifecycle_timeline_and_runs(signed_in: Client, scripted: Any) -> None:
    page = signed_in.get(PAGE).text
    operations = between(page, 'data-fragment="operations"')
    assert operations.index("worktree_prepare") < operations.index("Workspace job &#34;hello&#34;")
    assert f'href="/api/workspace-operations/{wire.OP}/output"' in operations
    lifecycle = between(page, 'data-fragment="lifecycle"')
    assert ">Archive workspace</button>" in lifecycle
    assert "Reopen workspace" not in lifecycle
    assert f"refs/clipyard/rescue/{wire.WS}/1" in lifecycle
    assert "<dialog data-archive-dialog" in page
    timeline = between(page, 'data-fragment="timeline"')
    assert timeline.index("workspace.realized.v1") < timeline.index("runtime_service.started.v1")
    assert "board <code>key-1</code>" in timeline
    assert f"<code>{rt.RUN}</code>" in timeline
    assert "issue ACME-1 started" in timeline
    assert 'data-history data-version="1"' in timeline  # the workspace's own event: its version
    assert timeline.count(">As it was after</button>") == 2
    assert 'aria-live="polite"' in between(page, 'aria-labelledby="history-heading"')
    runs = between(page, 'data-fragment="runs"')
    assert rt.RUN[:8] in runs
    assert "6f7a8b9c" not in runs
    (query,) = [s.message for s in scripted.sent if isinstance(s.message, ListRuns)]
    assert query.filters.issue_id == wire.ISSUE


def test_agents_show_by_name_in_the_timeline_and_the_runs(
    signed_in: Client, scripted: Any, company: str
) -> None:
    agent = "a1b2c3d4-0000-4000-8000-000000000001"
    scripted.replies[heartbeat_subjects.AGENT_LIST] = wire.page(
        {"id": agent, "companyId": company, "name": "coder", "adapterType": "process",
         "adapterConfig": {"command": ["true"]}, "trustLevel": "untrusted",
         "maxConcurrentRuns": 1, "heartbeatIntervalSec": None, "createdAt": wire.NOW,
         "updatedAt": wire.NOW}
    )  # fmt: skip
    scripted.replies[subjects.workspace_events("realizer")] = wire.page(
        event(actor={"type": "agent", "id": agent})
    )
    page = signed_in.get(PAGE).text
    assert '<dd data-field="event-actor">agent coder</dd>' in between(
        page, 'data-fragment="timeline"'
    )
    assert "<td>coder</td>" in between(page, 'data-fragment="runs"')


def test_a_closed_workspace_offers_reopen(signed_in: Client, scripted: Any, company: str) -> None:
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company, status="archived"))
    html = signed_in.get(f"{PAGE}?fragment=lifecycle").text
    assert ">Reopen workspace</button>" in html
    assert "Archive workspace" not in html


@pytest.mark.parametrize(
    "name", ["summary", "readiness", "diff", "services", "jobs", "configuration", "operations",
             "lifecycle", "timeline", "runs"],
)  # fmt: skip
def test_each_section_is_a_fragment(signed_in: Client, scripted: Any, name: str) -> None:
    response = signed_in.get(f"{PAGE}?fragment={name}")
    assert response.status_code == 200, response.text
    html = response.text.strip()
    assert html.startswith("<section")
    assert html.endswith("</section>")
    assert f'data-fragment="{name}"' in html
    assert "<html" not in html


def test_a_fragment_asks_only_for_its_section(signed_in: Client, scripted: Any) -> None:
    signed_in.get(f"{PAGE}?fragment=timeline")
    asked = {s.subject for s in scripted.sent}
    assert subjects.workspace_events("realizer") in asked
    assert subjects.WORKSPACE_GET in asked  # the workspace is checked first (404 as the page)
    assert RUNTIME_STATE not in asked
    assert heartbeat_subjects.RUN_LIST not in asked


def test_an_unknown_fragment_is_refused(signed_in: Client, scripted: Any) -> None:
    response = signed_in.get(f"{PAGE}?fragment=nope")
    assert response.status_code == 400
    assert "no fragment" in response.text


def test_another_company_workspace_is_not_found(signed_in: Client, bus: Any) -> None:
    bus.replies[subjects.WORKSPACE_GET] = ErrorReply(
        code="not_found", message="There is no execution workspace x.", status=404
    )
    response = signed_in.get(PAGE)
    assert response.status_code == 404
    assert "There is no execution workspace x." in response.text


def test_a_section_that_fails_says_so_and_the_rest_renders(
    signed_in: Client, scripted: Any
) -> None:
    scripted.replies[subjects.WORKSPACE_CLOSE_READINESS] = ErrorReply(
        code="timeout", message="workspace-realizer did not answer in time.", status=504
    )
    del scripted.replies[heartbeat_subjects.RUN_LIST]
    response = signed_in.get(PAGE)
    assert response.status_code == 200
    ready = between(response.text, 'data-fragment="readiness"')
    assert (
        'role="alert">This section could not be loaded: workspace-realizer did not answer' in ready
    )
    assert "could not be loaded" in between(response.text, 'data-fragment="runs"')
    assert "Start web" in response.text


def test_services_fall_back_to_the_project_workspace_runtime_config(
    signed_in: Client, scripted: Any, company: str
) -> None:
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company))
    scripted.replies[subjects.PROJECT_WORKSPACE_GET] = wire.ok(
        wire.project_workspace(
            company, runtimeConfig={"services": [{"name": "api", "command": "x"}]}
        )
    )
    scripted.replies[RUNTIME_STATE] = wire.ok(rt.state(company, runtimeServices=[]))
    html = signed_in.get(f"{PAGE}?fragment=services").text
    assert ">Start api</button>" in html
    assert '<td data-field="service-status">stopped</td>' in html


def test_no_inline_script_or_style_and_the_security_headers(
    signed_in: Client, scripted: Any
) -> None:
    response = signed_in.get(PAGE)
    tags = parse(response.text)
    scripts = [a for t, a in tags.tags if t == "script"]
    assert scripts
    assert all(a.get("src", "").startswith("/static/") for a in scripts)
    assert any("workspace.js" in (a.get("src") or "") for a in scripts)
    assert "<script>" not in response.text
    assert all("style" not in a and not any(k.startswith("on") for k in a) for _, a in tags.tags)
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert signed_in.get("/static/workspace.js").status_code == 200


def test_every_button_has_a_name_and_every_table_a_caption(
    signed_in: Client, scripted: Any
) -> None:
    html = signed_in.get(PAGE).text
    assert html.count("<table>") == html.count("<caption>") == 4
    for match in re.finditer(r"<button([^>]*)>(.*?)</button>", html, re.S):
        assert match.group(2).strip() or "aria-label" in match.group(1)
    live = between(html, "data-live-event-types=", ">")
    assert "runtime_service.started.v1" in live
    assert "workspace.archived.v1" in live
    assert "run.started.v1" in live


def _control_for(html: str, api_field: str) -> str | None:
    """The control ``showError`` (actions.js) puts a field's message next to: the longest
    ``data-api-field`` or ``name`` that is ``api_field`` or a prefix ending before ``.``/``[``."""
    best, length = None, -1
    for tag, attrs in parse(html).tags:
        if tag not in ("input", "select", "textarea"):
            continue
        for name in (attrs.get("data-api-field"), attrs.get("name")):
            if not name or not api_field.startswith(name):
                continue
            if api_field != name and api_field[len(name)] not in ".[":
                continue
            if len(name) > length:
                best, length = attrs.get("id"), len(name)
    return best


def _csrf(html: str) -> str:
    found = re.search(r'<meta name="csrf-token" content="([^"]+)">', html)
    assert found
    return found.group(1)


def test_a_refused_configuration_names_a_field_of_the_form(
    signed_in: Client, scripted: Any
) -> None:
    page = signed_in.get(PAGE).text
    form = between(page, 'data-fragment="configuration"')
    bad = {"config": {"workspaceRuntime": {"services": [{"name": "web", "command": 5}]}}}
    response = signed_in.patch(
        f"/api/execution-workspaces/{wire.WS}", json=bad, headers={"X-CSRF-Token": _csrf(page)}
    )
    assert response.status_code == 400, response.text
    (field,) = [one["field"] for one in response.json()["details"]["fields"]]
    assert field == "config.workspaceRuntime.services[0].command"
    assert _control_for(form, field) == "workspaceRuntime"
    assert _control_for(form, "config.provisionCommand") == "config-provision"
    assert _control_for(form, "config.cleanupCommandX") is None


def test_a_realizer_422_names_its_field_next_to_the_control(
    signed_in: Client, scripted: Any
) -> None:
    """The realizer refuses a runtime config as its InvalidInputError does: code
    ``unprocessable``, ``details.field`` = ``runtimeConfig.<path>``; actions.js places the message
    at the control that field names (``details.field`` when no ``details.fields``)."""
    page = signed_in.get(PAGE).text
    form = between(page, 'data-fragment="configuration"')
    message = "runtimeConfig.services[0].command is required: the shell command to run"
    scripted.replies[subjects.update_execution_workspace("local")] = ErrorReply(
        code="unprocessable",
        message=message,
        status=422,
        details={"field": "runtimeConfig.services[0].command"},
    )
    response = signed_in.patch(
        f"/api/execution-workspaces/{wire.WS}",
        json={"config": {"workspaceRuntime": {"services": [{"name": "web", "command": " "}]}}},
        headers={"X-CSRF-Token": _csrf(page)},
    )
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == message
    field = body["details"]["field"]
    assert _control_for(form, field) == "workspaceRuntime"
    controls = {a["id"]: a for t, a in parse(form).tags if t in ("input", "textarea")}
    assert controls["workspaceRuntime"]["data-api-field"] == "config.workspaceRuntime"
    assert '<label for="workspaceRuntime">Runtime config (JSON)</label>' in form
    # The gateway's own schema check names the same control the other way.
    assert _control_for(form, "config.workspaceRuntime.services[0].command") == "workspaceRuntime"


def test_an_unconfined_workspace_says_so_in_its_heading_and_summary(
    signed_in: Client, scripted: Any, company: str
) -> None:
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company, unconfined=True))
    html = signed_in.get(PAGE).text
    heading = between(html, "<h1>", "</h1>")
    assert 'class="status status-unconfined" data-field="unconfined"' in heading
    assert ">unconfined</span>" in heading
    assert 'title="This company is host-trusted: its commands run as the service user on the ' \
        'host, outside any sandbox."' in heading  # fmt: skip
    summary = between(html, 'data-fragment="summary"')
    assert "<dt>Confinement</dt>" in summary
    confinement = summary.split('data-field="confinement">')[1].split("</dd>")[0]
    assert ">unconfined</span>" in confinement
    assert "This company is host-trusted: its commands run as the service user on the host, " \
        "outside any sandbox." in confinement  # fmt: skip
    fragment = signed_in.get(f"{PAGE}?fragment=summary").text  # the live refresh keeps it
    assert 'data-field="confinement"' in fragment


def test_a_confined_workspace_shows_no_unconfined_mark(signed_in: Client, scripted: Any) -> None:
    html = signed_in.get(PAGE).text
    assert "unconfined" not in html
    assert "Confinement" not in html
    assert "host-trusted" not in html


def egress(verdict: str, host: str, port: int, count: int, **changes: Any) -> dict[str, Any]:
    """A supervisor's egress event row, its data as the supervisor stores it (snake_case)."""
    data = {
        "company_id": "c", "namespace": "ns-1", "period": "run", "target_key": None,
        "execution_workspace_id": wire.WS, "project_workspace_id": wire.PWS,
        "host": host, "port": port, "verdict": verdict, "count": count,
        "first_at": "2026-11-29T12:00:01Z", "last_at": "2026-11-29T12:00:04Z",
    }  # fmt: skip
    row = {
        "eventId": str(uuid.uuid4()),
        "type": "egress.observed.v1",
        "source": "supervisor",
        "aggregateId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{host}:{port}:{verdict}")),
        "occurredAt": "2026-11-29T12:00:06Z",
        "actor": {"type": "system", "id": "runtime-supervisor"},
        "reason": "the workspace's egress gate",
        "data": data,
    }
    return event(**(row | changes))


def _entry(timeline: str, host: str) -> str:
    """The ``<li>`` of the timeline that names ``host``."""
    found = [one for one in timeline.split("<li ")[1:] if host in one]
    assert len(found) == 1, timeline
    return "<li " + found[0].split("</li>")[0]


def test_egress_events_read_at_a_glance_and_a_denial_stands_out(
    signed_in: Client, scripted: Any
) -> None:
    scripted.replies[subjects.workspace_events("supervisor")] = wire.page(
        egress("denied", "example.com", 53, 3),
        egress("allowed", "registry.npmjs.org", 443, 1),
        egress("denied", "evil.example", 8443, 7, type="egress.tallied.v1"),
        event(eventId="5e1f2a3b-4c5d-4e6f-8a7b-8c9d0e1f2a3b", type="runtime_service.started.v1",
              source="supervisor", aggregateId=rt.SERVICE, occurredAt="2026-11-29T12:00:05Z"),
    )  # fmt: skip
    timeline = signed_in.get(f"{PAGE}?fragment=timeline").text
    dns = _entry(timeline, "DNS lookup of example.com")
    assert 'class="egress egress-denied" data-egress-verdict="denied"' in dns
    assert (
        '<strong data-field="egress">DNS lookup of example.com '
        '<span class="status status-denied">denied</span> \N{MULTIPLICATION SIGN}3</strong>'
    ) in dns
    assert '<span class="muted" data-field="event-type">egress.observed.v1</span>' in dns
    assert "12:00:01 UTC</time> to <time" in dns  # first seen to last seen
    assert (
        'aria-label="As it was after DNS lookup of example.com denied \N{MULTIPLICATION SIGN}3 at '
        in dns
    )
    npm = _entry(timeline, "registry.npmjs.org")
    assert 'class="egress egress-allowed"' in npm
    assert (
        '<strong data-field="egress">Connection to registry.npmjs.org:443 '
        '<span class="status status-allowed">allowed</span> \N{MULTIPLICATION SIGN}1</strong>'
    ) in npm
    assert "status-denied" not in npm
    tallied = _entry(timeline, "evil.example")
    assert "Connection to evil.example:8443" in tallied
    assert "denied</span> \N{MULTIPLICATION SIGN}7 in all</strong>" in tallied  # the period's total
    # Any other event keeps the generic rendering.
    started = _entry(timeline, "runtime_service.started.v1")
    assert '<strong data-field="event-label">Runtime service started</strong>' in started
    assert (
        '<code class="muted" data-field="event-type">runtime_service.started.v1</code>' in started
    )
    assert "egress" not in started


def test_an_egress_event_whose_data_does_not_read_as_egress_is_shown_as_any_event(
    signed_in: Client, scripted: Any
) -> None:
    odd = egress("denied", "example.com", 53, 1)
    odd["data"] = {"host": "example.com", "port": "fifty-three", "verdict": "maybe"}
    camel = egress("denied", "camel.example", 443, 2)
    camel["data"] = {"host": "camel.example", "port": 443, "verdict": "denied", "count": 2,
                     "firstAt": "2026-11-29T12:00:02Z", "lastAt": "2026-11-29T12:00:02Z"}  # fmt: skip
    scripted.replies[subjects.workspace_events("supervisor")] = wire.page(odd, camel)
    timeline = signed_in.get(f"{PAGE}?fragment=timeline").text
    plain = _entry(timeline, odd["eventId"])
    assert '<strong data-field="event-label">Egress observed</strong>' in plain
    assert '<code class="muted" data-field="event-type">egress.observed.v1</code>' in plain
    assert 'data-field="egress"' not in plain
    read = _entry(timeline, "camel.example")
    assert "Connection to camel.example:443 <span" in read
    assert 'data-field="egress-seen"><time datetime="2026-11-29T12:00:02+00:00">' in read
    assert "</time> to <time" not in read  # seen once: one moment
