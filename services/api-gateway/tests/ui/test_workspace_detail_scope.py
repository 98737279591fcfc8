"""The workspace detail page keeps to its workspace and shows the newest records: every fragment
of another company's workspace is 404, an ``operationId`` of another workspace is ignored, the
operations, timeline and jobs read the tail of long logs, live fragments do not re-probe health,
and a service URL is a link only for http(s)."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.ui.workspace_data import EVENT_WINDOW, OPERATION_WINDOW, SECTIONS
from contracts import workspace_subjects as subjects
from contracts.base import ErrorReply
from contracts.execution_commands import (
    GetWorkspaceEvents,
    GetWorkspaceOperation,
    ListWorkspaceOperations,
)
from contracts.runtime_commands import GetRuntimeState
from contracts.runtime_subjects import RUNTIME_STATE

_spec = importlib.util.spec_from_file_location(
    "detail_page_tests", Path(__file__).parent / "test_workspace_detail_page.py"
)
assert _spec
assert _spec.loader
detail: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(detail)

signed_in = detail.signed_in
scripted = detail.scripted
rt = detail.rt
wire = detail.wire
between = detail.between
parse = detail.parse
PAGE = detail.PAGE
JOB_OP = detail.JOB_OP

Client = TestClient[Any]
START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
FOREIGN_WS = "7f3c5e1a-0b9d-4a2e-9c3d-5e6f7a8b9c0d"
FOREIGN_OP = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"


def _id(prefix: int, index: int) -> str:
    return f"{prefix:08x}-0000-4000-8000-{index:012x}"


def _at(seconds: int) -> str:
    return (START + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _paged(rows: list[dict[str, Any]]) -> Any:
    """A source that holds ``rows`` (oldest first) and answers windows of them as the realizer
    and the supervisor do: ``items[offset:offset+limit]`` and the total."""

    def answer(message: Any) -> Any:
        return wire.page(*rows[message.offset : message.offset + message.limit], total=len(rows))

    return answer


# -- 404 for another company's (or a missing) workspace, in every fragment ---------------------


@pytest.mark.parametrize("name", [None, *SECTIONS])
def test_every_fragment_of_another_company_workspace_is_not_found(
    signed_in: Client, scripted: Any, name: str | None
) -> None:
    missing = ErrorReply(code="not_found", message="There is no execution workspace x.", status=404)
    # The realizer refuses everything about a workspace the principal's company does not own.
    for subject in (
        subjects.WORKSPACE_GET,
        subjects.WORKSPACE_CLOSE_READINESS,
        subjects.workspace_operations("realizer"),
        subjects.workspace_events("realizer"),
    ):
        scripted.replies[subject] = missing
    # The supervisor holds nothing of it either.
    scripted.replies[subjects.workspace_operations("supervisor")] = wire.page()
    scripted.replies[subjects.workspace_events("supervisor")] = wire.page()
    url = PAGE if name is None else f"{PAGE}?fragment={name}"
    response = signed_in.get(url)
    assert response.status_code == 404, (name, response.text)
    assert "There is no execution workspace x." in response.text
    assert 'data-fragment="' not in response.text


# -- operationId must be one of this workspace's operations ------------------------------------


def test_an_operation_of_another_workspace_is_ignored(
    signed_in: Client, scripted: Any, company: str
) -> None:
    own = detail.job_operation(company, stdoutExcerpt="hello\n", truncated=False)
    foreign = detail.job_operation(
        company,
        id=FOREIGN_OP,
        executionWorkspaceId=FOREIGN_WS,
        stdoutExcerpt="SECRET OF ANOTHER WORKSPACE\n",
        truncated=False,
    )
    scripted.replies[subjects.workspace_operation("supervisor")] = lambda message: wire.ok(
        foreign if message.operation_id == FOREIGN_OP else own
    )
    for url in (
        f"{PAGE}?fragment=jobs&operationId={FOREIGN_OP}",
        f"{PAGE}?operationId={FOREIGN_OP}",
    ):
        response = signed_in.get(url)
        assert response.status_code == 200, response.text
        jobs = between(response.text, 'data-fragment="jobs"')
        assert "SECRET OF ANOTHER WORKSPACE" not in jobs
        assert FOREIGN_OP not in jobs
        # The newest job run of this workspace is shown instead.
        assert f'data-operation-id="{JOB_OP}"' in jobs
        assert 'data-field="job-output">hello\n</pre>' in jobs


def test_an_operation_of_this_workspace_is_shown(
    signed_in: Client, scripted: Any, company: str
) -> None:
    other_run = detail.job_operation(
        company, id=FOREIGN_OP, stdoutExcerpt="an older run\n", truncated=False
    )
    scripted.replies[subjects.workspace_operation("supervisor")] = wire.ok(other_run)
    jobs = signed_in.get(f"{PAGE}?fragment=jobs&operationId={FOREIGN_OP}").text
    assert f'data-operation-id="{FOREIGN_OP}"' in jobs
    assert "an older run" in jobs


# -- the newest rows, beyond the window -------------------------------------------------------


def test_operations_and_jobs_show_the_newest_rows(
    signed_in: Client, scripted: Any, company: str
) -> None:
    extra = 7
    realizer = [
        wire.operation(company, id=_id(1, i), startedAt=_at(2 * i), finishedAt=_at(2 * i))
        for i in range(OPERATION_WINDOW + extra)
    ]
    metadata = {"workspaceCommandKind": "job", "workspaceCommandId": "job:hello"}
    supervisor = [
        rt.sup_operation(company, id=_id(2, i), startedAt=_at(2 * i + 1), metadata=metadata)
        for i in range(OPERATION_WINDOW + extra)
    ]
    scripted.replies[subjects.workspace_operations("realizer")] = _paged(realizer)
    scripted.replies[subjects.workspace_operations("supervisor")] = _paged(supervisor)
    newest_job = supervisor[-1]
    scripted.replies[subjects.workspace_operation("supervisor")] = lambda message: wire.ok(
        {**newest_job, "stdoutExcerpt": f"output of {message.operation_id}\n"}
    )
    html = signed_in.get(PAGE).text
    operations = between(html, 'data-fragment="operations"')
    total = 2 * (OPERATION_WINDOW + extra)
    assert f"Showing the last {OPERATION_WINDOW} of {total} operations." in operations
    shown = [
        a["data-operation-id"]
        for t, a in parse(operations).tags
        if t == "tr" and a.get("data-operation-id")
    ]
    newest = sorted(realizer + supervisor, key=lambda row: row["startedAt"])[-OPERATION_WINDOW:]
    assert shown == [row["id"] for row in newest]
    assert realizer[-1]["id"] in shown
    assert realizer[0]["id"] not in shown
    # Each source was read from its tail.
    asked = [s.message for s in scripted.sent if isinstance(s.message, ListWorkspaceOperations)]
    assert {(one.offset, one.limit) for one in asked} >= {(extra, OPERATION_WINDOW)}
    # The Jobs section: the last run and the default output are the newest job run.
    jobs = between(html, 'data-fragment="jobs"')
    assert f'data-operation-id="{newest_job["id"]}"' in jobs
    assert f"output of {newest_job['id']}" in jobs
    lookups = [s.message for s in scripted.sent if isinstance(s.message, GetWorkspaceOperation)]
    assert {one.operation_id for one in lookups} == {newest_job["id"]}
    assert (
        f'datetime="{_at(2 * (OPERATION_WINDOW + extra - 1) + 1).replace("Z", "+00:00")}"' in jobs
    )


def test_the_timeline_shows_the_newest_events(signed_in: Client, scripted: Any) -> None:
    extra = 3
    events = [
        detail.event(eventId=_id(3, i), aggregateVersion=i + 1, occurredAt=_at(i))
        for i in range(EVENT_WINDOW + extra)
    ]
    scripted.replies[subjects.workspace_events("realizer")] = _paged(events)
    scripted.replies[subjects.workspace_events("supervisor")] = wire.page()
    timeline = signed_in.get(f"{PAGE}?fragment=timeline").text
    assert f"Showing the last {EVENT_WINDOW} of {EVENT_WINDOW + extra} events." in timeline
    shown = [
        a["data-event-id"] for t, a in parse(timeline).tags if t == "li" and a.get("data-event-id")
    ]
    assert shown == [row["eventId"] for row in events[extra:]]
    asked = [s.message for s in scripted.sent if isinstance(s.message, GetWorkspaceEvents)]
    assert any(one.offset == extra and one.limit == EVENT_WINDOW for one in asked)


def test_a_short_log_is_read_once_and_not_called_cut(signed_in: Client, scripted: Any) -> None:
    timeline = signed_in.get(f"{PAGE}?fragment=timeline").text
    assert "Showing the last" not in timeline
    asked = [s.message for s in scripted.sent if isinstance(s.message, GetWorkspaceEvents)]
    assert [(one.offset, one.limit) for one in asked] == [(0, EVENT_WINDOW)] * 2


# -- health is probed on the full page only ---------------------------------------------------


def _probes(bus: Any) -> list[bool]:
    return [s.message.probe_health for s in bus.sent if isinstance(s.message, GetRuntimeState)]


def test_only_the_full_page_probes_health(signed_in: Client, scripted: Any) -> None:
    assert signed_in.get(PAGE).status_code == 200
    assert True in _probes(scripted)  # the page's workspace (close readiness never probes)
    for name in SECTIONS:
        scripted.sent.clear()
        assert signed_in.get(f"{PAGE}?fragment={name}").status_code == 200
        assert True not in _probes(scripted), name


# -- a service URL is a link only for http(s) --------------------------------------------------


@pytest.mark.parametrize(
    ("url", "linked"),
    [
        ("http://127.0.0.1:41007/", True),
        ("https://web.example/", True),
        ("javascript:alert(1)", False),
        ("JaVaScRiPt:alert(1)", False),
        ("java\tscript:alert(1)", False),
        (" javascript:alert(1)", False),
        ("data:text/html,<script>alert(1)</script>", False),
        ("//evil.example/", False),
        ("http:/nohost", False),
    ],
)
def test_a_service_url_is_a_link_only_for_http(
    signed_in: Client, scripted: Any, company: str, url: str, linked: bool
) -> None:
    state = rt.state(company, runtimeServices=[rt.service(company, url=url)])
    scripted.replies[RUNTIME_STATE] = wire.ok(state)
    html = signed_in.get(f"{PAGE}?fragment=services").text
    cell = between(html, 'data-field="service-url"', "</td>")
    anchors = [a for t, a in parse(cell).tags if t == "a"]
    if linked:
        assert [a["href"] for a in anchors] == [url]
    else:
        assert anchors == []
        assert "<code>" in cell
