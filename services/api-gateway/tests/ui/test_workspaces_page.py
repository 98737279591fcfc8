"""``/workspaces``: filters become the API's bus query, rows show services, ``?fragment=rows``
answers the table body, and the live attributes name event types the stream accepts."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.controllers.events import EVENT_TYPES
from contracts import workspace_subjects as subjects
from contracts.base import ErrorReply
from contracts.execution_commands import ListExecutionWorkspaces
from contracts.runtime_commands import GetRuntimeState, ListRuntimeSummaries
from contracts.runtime_subjects import RUNTIME_STATE, RUNTIME_SUMMARIES

_spec = importlib.util.spec_from_file_location("pages", Path(__file__).parent / "pages.py")
assert _spec
assert _spec.loader
pages: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pages)
wire = pages.wire

Client = TestClient[Any]
OTHER_WS = "5d1a3c9e-8b7a-4e2d-9a1b-3c4d5e6f7a8b"


@pytest.fixture
def signed_in(
    client: Client, company: str, make_board_key: Callable[[str], str], bus: Any
) -> Client:
    pages.sign_in(client, make_board_key(company), bus)
    return client


def _list_queries(bus: Any) -> list[ListExecutionWorkspaces]:
    return [s.message for s in bus.sent if s.subject == subjects.WORKSPACE_LIST]


def _summary_queries(bus: Any) -> list[ListRuntimeSummaries]:
    return [s.message for s in bus.sent if s.subject == RUNTIME_SUMMARIES]


def _summaries(*items: tuple[str, int, int]) -> Any:
    return wire.ok({"items": [{"workspaceId": w, "running": r, "total": t} for w, r, t in items]})


def _services_cell(html: str, workspace_id: str) -> str:
    row = html.split(f'data-workspace-id="{workspace_id}"')[1].split("</tr>")[0]
    return row.split('data-field="services">')[1].split("</td>")[0]


def test_the_page_lists_workspaces_with_their_services(
    signed_in: Client, bus: Any, company: str
) -> None:
    bus.replies[subjects.WORKSPACE_LIST] = wire.page(
        wire.workspace(company), wire.workspace(company, id=OTHER_WS, name="acme-2", status="idle")
    )
    bus.replies[subjects.PROJECT_LIST] = wire.page(wire.project(company))
    bus.replies[subjects.ISSUE_LIST] = wire.page(wire.issue(company))
    bus.replies[RUNTIME_SUMMARIES] = _summaries((wire.WS, 1, 2))  # OTHER_WS left out
    response = signed_in.get("/workspaces")
    assert response.status_code == 200
    html = response.text
    assert "<h1>Execution workspaces</h1>" in html
    assert "<caption>Execution workspaces</caption>" in html
    for header in ("Name", "Status", "Mode", "Branch", "Last used", "Services (running / total)"):
        assert f'<th scope="col">{header}</th>' in html
    assert f'<tr data-workspace-id="{wire.WS}">' in html
    assert f'<a href="/workspaces/{wire.WS}">acme-1</a>' in html
    row = html.split(f'data-workspace-id="{wire.WS}"')[1].split("</tr>")[0]
    assert 'data-field="services">1 / 2<' in row
    other = html.split(f'data-workspace-id="{OTHER_WS}"')[1].split("</tr>")[0]
    assert "unknown" in other  # the supervisor left it out: the page still renders
    (asked,) = _summary_queries(bus)
    assert asked.workspace_ids == [wire.WS, OTHER_WS]
    assert asked.principal.company_id == company
    assert not any(s.subject == RUNTIME_STATE for s in bus.sent)  # no question per row
    assert "2026-11-29 12:00:00 UTC" in row
    assert f'<option value="{wire.PROJECT}">Web</option>' in html
    assert "ACME-1 Fix login" in html
    for label in ("Project", "Status", "Issue"):
        assert f">{label}</label>" in html
    assert '<button type="submit">Apply filters</button>' in html
    assert '<nav aria-label="Main">' in html
    assert "Acme Corp" in html  # the company's name


def test_filters_become_the_apis_query(signed_in: Client, bus: Any, company: str) -> None:
    query = f"/workspaces?projectId={wire.PROJECT}&status=active&issueId={wire.ISSUE}"
    assert signed_in.get(query).status_code == 200
    sent = _list_queries(bus)[-1]
    assert sent.company_id == company
    assert sent.principal.company_id == company
    assert sent.principal.actor.type == "board"
    assert (sent.filters.project_id, sent.filters.issue_id) == (wire.PROJECT, wire.ISSUE)
    assert sent.filters.statuses == ["active"]
    html = signed_in.get(query).text
    assert '<option value="active" selected>active</option>' in html
    assert f'<option value="{wire.ISSUE}" selected>' in html  # an issue beyond the list stays
    assert signed_in.get("/workspaces?projectId=&status=&issueId=").status_code == 200
    empty = _list_queries(bus)[-1]
    assert (empty.filters.project_id, empty.filters.issue_id, empty.filters.statuses) == (
        None,
        None,
        [],
    )


def test_an_unknown_status_is_refused_with_the_apis_message(signed_in: Client, bus: Any) -> None:
    before = len(_list_queries(bus))
    response = signed_in.get("/workspaces?status=sleeping")
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("text/html")
    assert 'role="alert"' in response.text
    assert "Unknown status value &#39;sleeping&#39;" in response.text
    assert len(_list_queries(bus)) == before


def test_a_realizer_error_is_an_html_page_with_its_status(signed_in: Client, bus: Any) -> None:
    bus.replies[subjects.WORKSPACE_LIST] = ErrorReply(
        code="timeout", message="ws.qry.workspace.list did not answer in time", status=504
    )
    response = signed_in.get("/workspaces")
    assert response.status_code == 504
    assert "did not answer in time" in response.text
    assert '<nav aria-label="Main">' in response.text  # still signed in: the navigation stays
    assert '<meta name="csrf-token"' in response.text
    assert "Content-Security-Policy" in response.headers


def test_the_rows_fragment_is_the_table_body(signed_in: Client, bus: Any, company: str) -> None:
    bus.replies[subjects.WORKSPACE_LIST] = wire.page(wire.workspace(company))
    bus.replies[RUNTIME_SUMMARIES] = _summaries((wire.WS, 1, 1))
    response = signed_in.get("/workspaces?status=active&fragment=rows")
    assert response.status_code == 200
    html = response.text.strip()
    assert html.startswith('<tbody data-fragment="rows"')
    assert html.endswith("</tbody>")
    assert "<html" not in html
    assert "<nav" not in html
    assert f'<tr data-workspace-id="{wire.WS}">' in html
    assert _services_cell(html, wire.WS) == "1 / 1"
    assert _list_queries(bus)[-1].filters.statuses == ["active"]
    assert response.headers["content-security-policy"].startswith("default-src 'self'")
    unknown = signed_in.get("/workspaces?fragment=nope")
    assert unknown.status_code == 400
    assert "no fragment" in unknown.text


def test_the_page_goes_live_on_workspace_and_service_events(
    signed_in: Client, bus: Any, company: str
) -> None:
    html = signed_in.get("/workspaces").text
    found = re.search(r'data-live-types="([^"]+)" data-live-fragment="rows"', html)
    assert found
    types = found.group(1).split(",")
    assert {"workspace.realized.v1", "runtime_service.started.v1"} <= set(types)
    assert set(types) <= EVENT_TYPES
    assert all(t.startswith(("workspace.", "runtime_service.")) for t in types)
    assert 'role="status" aria-live="polite" data-live-status' in html
    assert f'data-company-id="{company}"' in html
    # The stream the page opens accepts those types with the session cookie (a GET: no CSRF).
    stream = signed_in.get(
        f"/api/companies/{company}/events/stream", params={"types": ",".join(types)}
    )
    assert stream.status_code == 200
    assert stream.headers["content-type"].startswith("text/event-stream")


@pytest.mark.parametrize(
    "reply",
    [
        ErrorReply(code="timeout", message="late", status=504),
        ErrorReply(code="service_unavailable", message="no responders", status=503),
        wire.ok({"items": [{"workspaceId": wire.WS, "running": "many"}]}),
    ],
    ids=["timeout", "unavailable", "unreadable"],
)
def test_rows_show_unknown_services_when_the_supervisor_does_not_answer(
    signed_in: Client, bus: Any, company: str, reply: Any
) -> None:
    bus.replies[subjects.WORKSPACE_LIST] = wire.page(
        wire.workspace(company), wire.workspace(company, id=OTHER_WS, name="acme-2")
    )
    bus.replies[RUNTIME_SUMMARIES] = reply
    response = signed_in.get("/workspaces?fragment=rows")
    assert response.status_code == 200
    for one in (wire.WS, OTHER_WS):
        assert _services_cell(response.text, one) == '<span class="muted">unknown</span>'
    assert len(_summary_queries(bus)) == 1


def test_no_rows_ask_the_supervisor_nothing(signed_in: Client, bus: Any, company: str) -> None:
    bus.replies[subjects.WORKSPACE_LIST] = wire.page()
    response = signed_in.get("/workspaces?fragment=rows")
    assert response.status_code == 200
    assert "No execution workspaces match these filters." in response.text
    assert _summary_queries(bus) == []


def test_each_live_refresh_asks_once_for_all_rows_and_never_probes_health(
    signed_in: Client, bus: Any, company: str
) -> None:
    bus.replies[subjects.WORKSPACE_LIST] = wire.page(
        wire.workspace(company), wire.workspace(company, id=OTHER_WS, name="acme-2")
    )
    counts = iter([(0, 2), (2, 2)])

    def answer(query: ListRuntimeSummaries) -> Any:
        running, total = next(counts)
        return _summaries(*((one, running, total) for one in query.workspace_ids))

    bus.replies[RUNTIME_SUMMARIES] = answer
    first = signed_in.get("/workspaces?fragment=rows").text
    second = signed_in.get("/workspaces?fragment=rows").text  # after a runtime_service.* event
    assert (_services_cell(first, wire.WS), _services_cell(first, OTHER_WS)) == ("0 / 2",) * 2
    assert (_services_cell(second, wire.WS), _services_cell(second, OTHER_WS)) == ("2 / 2",) * 2
    assert [q.workspace_ids for q in _summary_queries(bus)] == [[wire.WS, OTHER_WS]] * 2
    assert not any(isinstance(s.message, GetRuntimeState) for s in bus.sent)


def test_an_unconfined_workspace_is_marked_in_its_row_and_the_page_says_why(
    signed_in: Client, bus: Any, company: str
) -> None:
    """A workspace of a ``hostTrusted`` company (``unconfined``) says so; a confined one does
    not (the row fragment the live refresh swaps in says it too)."""
    bus.replies[subjects.WORKSPACE_LIST] = wire.page(
        wire.workspace(company, unconfined=True),
        wire.workspace(company, id=OTHER_WS, name="acme-2"),
    )
    bus.replies[RUNTIME_SUMMARIES] = _summaries((wire.WS, 0, 0), (OTHER_WS, 0, 0))
    html = signed_in.get("/workspaces").text
    row = html.split(f'data-workspace-id="{wire.WS}"')[1].split("</tr>")[0]
    badge = re.search(r'<span class="status status-unconfined" data-field="unconfined" '
                      r'title="([^"]+)">unconfined</span>', row)  # fmt: skip
    assert badge, row
    assert "host-trusted" in badge.group(1)
    assert "outside any sandbox" in badge.group(1)
    other = html.split(f'data-workspace-id="{OTHER_WS}"')[1].split("</tr>")[0]
    assert "unconfined" not in other
    note = html.split('data-field="unconfined-note">')[1].split("</p>")[0]
    assert "This company is host-trusted: its commands run as the service user on the host" in note
    rows = signed_in.get("/workspaces?fragment=rows").text
    assert 'data-field="unconfined"' in rows.split(f'data-workspace-id="{OTHER_WS}"')[0]


def test_confined_workspaces_show_no_unconfined_mark(
    signed_in: Client, bus: Any, company: str
) -> None:
    bus.replies[subjects.WORKSPACE_LIST] = wire.page(wire.workspace(company, unconfined=False))
    bus.replies[RUNTIME_SUMMARIES] = _summaries((wire.WS, 0, 0))
    html = signed_in.get("/workspaces").text
    assert f'<tr data-workspace-id="{wire.WS}">' in html
    assert "unconfined" not in html
    assert "host-trusted" not in html
