"""What the workspace detail page says about who and what: a board key acting in the timeline by
its name, a stopped service's last URL as plain text, and the runtime config a workspace inherits
from its project workspace shown (read-only) in "Configuration"."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts import workspace_subjects as subjects
from contracts.base import ErrorReply
from contracts.runtime_subjects import RUNTIME_STATE

_spec = importlib.util.spec_from_file_location(
    "detail_page_tests_labels", Path(__file__).parent / "test_workspace_detail_page.py"
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

Client = TestClient[Any]
INHERITED = {"jobs": [{"name": "hello", "command": "echo inherited"}]}


def _actor(html: str) -> str:
    return between(html, '<dd data-field="event-actor">', "</dd>")


def test_a_board_key_acts_by_its_name(
    client: Client, scripted: Any, company: str, admin: dict[str, str]
) -> None:
    made = client.post(
        f"/api/companies/{company}/api-keys", json={"name": "me", "kind": "board"}, headers=admin
    )
    assert made.status_code == 201, made.text
    assert client.post("/sign-in", json={"key": made.json()["key"]}).status_code == 200
    scripted.replies[subjects.workspace_events("realizer")] = wire.page(
        detail.event(actor={"type": "board", "id": made.json()["id"]})
    )
    scripted.replies[subjects.workspace_events("supervisor")] = wire.page()
    timeline = client.get(f"{PAGE}?fragment=timeline").text
    assert _actor(timeline).endswith(">me (board key)")


def test_a_board_key_not_found_shows_its_short_id(signed_in: Client, scripted: Any) -> None:
    key = "0b1c2d3e-4f5a-4b6c-8d7e-8f9a0b1c2d3e"
    scripted.replies[subjects.workspace_events("realizer")] = wire.page(
        detail.event(actor={"type": "board", "id": key})
    )
    scripted.replies[subjects.workspace_events("supervisor")] = wire.page()
    timeline = signed_in.get(f"{PAGE}?fragment=timeline").text
    assert _actor(timeline).endswith(">board <code>0b1c2d3e</code>")


@pytest.mark.parametrize(
    ("status", "linked"),
    [("running", True), ("starting", True), ("stopped", False), ("failed", False)],
)
def test_only_a_live_service_url_is_a_link(
    signed_in: Client, scripted: Any, company: str, status: str, linked: bool
) -> None:
    url = "http://127.0.0.1:41007/"
    state = rt.state(company, runtimeServices=[rt.service(company, status=status, url=url)])
    scripted.replies[RUNTIME_STATE] = wire.ok(state)
    html = signed_in.get(f"{PAGE}?fragment=services").text
    cell = between(html, 'data-field="service-url"', "</td>")
    anchors = [a for t, a in parse(cell).tags if t == "a"]
    assert bool(anchors) == linked
    assert url in cell
    if not linked:
        assert '<span class="muted">' in cell


def test_the_inherited_runtime_config_is_shown_read_only(
    signed_in: Client, scripted: Any, company: str
) -> None:
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company))
    scripted.replies[subjects.PROJECT_WORKSPACE_GET] = wire.ok(
        wire.project_workspace(company, name="main checkout", runtimeConfig=INHERITED)
    )
    html = signed_in.get(f"{PAGE}?fragment=configuration").text
    assert "Inherited from project workspace “main checkout”" in html
    shown = between(html, 'data-field="inherited-runtime">', "</pre>")
    assert "echo inherited" in shown
    # The editor stays empty (saving it as is keeps inheriting); the inherited one is no control.
    assert "echo inherited" not in between(html, "<textarea", "</textarea>")
    (editor,) = [
        a
        for t, a in parse(html).tags
        if t in ("textarea", "input") and a.get("id") == "workspaceRuntime"
    ]
    assert editor["name"] == "runtimeConfig"


def test_an_own_runtime_config_shows_no_inherited_one(signed_in: Client, scripted: Any) -> None:
    html = signed_in.get(f"{PAGE}?fragment=configuration").text
    assert "data-inherited-runtime" not in html
    assert subjects.PROJECT_WORKSPACE_GET not in {s.subject for s in scripted.sent}


def test_a_project_workspace_that_does_not_answer_is_said(
    signed_in: Client, scripted: Any, company: str
) -> None:
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company))
    scripted.replies[subjects.PROJECT_WORKSPACE_GET] = ErrorReply(
        code="timeout", message="workspace-realizer did not answer in time.", status=504
    )
    html = signed_in.get(f"{PAGE}?fragment=configuration").text
    assert "This section could not be loaded: workspace-realizer did not answer" in html
    assert ">Save configuration</button>" in html


def test_a_deleted_project_workspace_leaves_nothing_inherited_and_no_error(
    signed_in: Client, scripted: Any, company: str
) -> None:
    scripted.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company))
    scripted.replies[subjects.PROJECT_WORKSPACE_GET] = ErrorReply(
        code="not_found", message="There is no project workspace.", status=404
    )
    html = signed_in.get(f"{PAGE}?fragment=configuration").text
    assert "could not be loaded" not in html
    assert "data-inherited-runtime" not in html
    assert ">Save configuration</button>" in html
