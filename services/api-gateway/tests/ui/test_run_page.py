"""``/runs/{id}``: a run's page from the controller's answer: its facts with names, its stages with
their times, Cancel while it is active, the log's place; the summary as a fragment; another
company's run is 404 as in the API."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts import heartbeat_subjects, workspace_subjects
from contracts.agents import GetRun
from contracts.base import ErrorReply

_spec = importlib.util.spec_from_file_location("pages", Path(__file__).parent / "pages.py")
assert _spec
assert _spec.loader
pages: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pages)
wire, heartbeat = pages.wire, pages.heartbeat

Client = TestClient[Any]
PAGE = f"/runs/{heartbeat.RUN}"
STAGES = [
    {"stage": "wakeup", "enteredAt": "2026-11-29T12:00:00Z"},
    {"stage": "workspace_resolution", "enteredAt": "2026-11-29T12:00:01.500000Z"},
    {"stage": "adapter_launch", "enteredAt": "2026-11-29T12:00:04Z"},
]


@pytest.fixture
def signed_in(
    client: Client, company: str, make_board_key: Callable[[str], str], bus: Any
) -> Client:
    pages.sign_in(client, make_board_key(company), bus)
    bus.replies[heartbeat_subjects.AGENT_LIST] = wire.page(heartbeat.agent(company))
    bus.replies[workspace_subjects.ISSUE_LIST] = wire.page(wire.issue(company))
    return client


def _run(bus: Any, company: str, **changes: Any) -> None:
    run = heartbeat.run(company, stages=STAGES, **changes)
    bus.replies[heartbeat_subjects.RUN_GET] = wire.ok(run)


def test_a_running_runs_page_shows_its_facts_stages_log_and_cancel(
    signed_in: Client, bus: Any, company: str
) -> None:
    _run(bus, company, status="running", stage="adapter_launch", finishedAt=None)
    response = signed_in.get(PAGE)
    assert response.status_code == 200, response.text
    html = response.text
    assert 'data-run-status="running"' in html
    assert ">coder<" in html
    assert f'<a href="/issues/{wire.ISSUE}">ACME-1</a>' in html
    assert '<button type="button" class="danger" data-cancel-run>Cancel run</button>' in html
    stages = html.split('data-field="stages"')[1].split("</ol>")[0]
    assert [part.split("</strong>")[0] for part in stages.split("<strong>")[1:]] == [
        "wakeup", "workspace_resolution", "adapter_launch",
    ]  # fmt: skip
    assert "1.5 s" in stages
    assert "2.5 s" in stages
    assert '<li data-stage="adapter_launch" aria-current="step">' in stages
    assert stages.count("aria-current") == 1
    assert "data-run-log" in html
    assert "run.stage_changed.v1" in html  # the live event types
    (asked,) = [s.message for s in bus.sent if isinstance(s.message, GetRun)]
    assert asked.run_id == heartbeat.RUN


def test_a_finished_run_shows_its_end_and_no_cancel(
    signed_in: Client, bus: Any, company: str
) -> None:
    _run(bus, company, status="failed", stage="cleanup", exitCode=3, errorCode="adapter_exit",
         error="the adapter exited with 3", usage={"tokens": 12}, result={"ok": False},
         finishedAt="2026-11-29T12:00:10Z")  # fmt: skip
    html = signed_in.get(PAGE).text
    assert "data-cancel-run disabled" in html
    assert "<code>adapter_exit</code> the adapter exited with 3" in html
    assert '"tokens": 12' in html
    assert '"ok": false' in html
    summary = signed_in.get(f"{PAGE}?fragment=summary").text.strip()
    assert summary.startswith("<section")
    assert 'data-run-status="failed"' in summary
    assert "<html" not in summary


def test_another_companys_run_is_not_found(signed_in: Client, bus: Any) -> None:
    bus.replies[heartbeat_subjects.RUN_GET] = ErrorReply(
        code="not_found", message="No run with this id.", status=404
    )
    response = signed_in.get(PAGE)
    assert response.status_code == 404
    assert "No run with this id." in response.text


def test_a_run_without_stages_from_an_older_controller_still_shows(
    signed_in: Client, bus: Any, company: str
) -> None:
    bus.replies[heartbeat_subjects.RUN_GET] = wire.ok(heartbeat.run(company, stages=[]))
    response = signed_in.get(PAGE)
    assert response.status_code == 200, response.text
    assert 'data-run-status="running"' in response.text
