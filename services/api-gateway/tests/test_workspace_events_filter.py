"""A workspace's events over HTTP take the filter of the event stream and the CLI (``?types=``:
types, types without version, aggregates), checked before any service is asked; the page's
timeline takes it too, and shows each event's label beside its type."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts import workspace_subjects as subjects
from contracts.execution_commands import GetWorkspaceEvents

_spec = importlib.util.spec_from_file_location(
    "workspace_fixtures", Path(__file__).parent / "workspace_fixtures.py"
)
assert _spec
assert _spec.loader
wire: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wire)

Client = TestClient[Any]
WS_URL = f"/api/execution-workspaces/{wire.WS}"


def _row(event_id: str, type_: str, label: str = "") -> dict[str, Any]:
    return {
        "eventId": event_id,
        "type": type_,
        "label": label,
        "source": "realizer",
        "aggregateId": wire.WS,
        "aggregateVersion": 1,
        "occurredAt": wire.NOW,
    }


def _asked(bus: Any) -> list[GetWorkspaceEvents]:
    return [s.message for s in bus.sent if isinstance(s.message, GetWorkspaceEvents)]


@pytest.fixture
def signed_in(
    client: Client, bus: Any, company: str, make_board_key: Callable[[str], str]
) -> Client:
    """The client with a page session of ``company``, whose workspace the realizer shows."""
    bus.replies[subjects.WORKSPACE_GET] = wire.ok(wire.workspace(company))
    response = client.post("/sign-in", json={"key": make_board_key(company)})
    assert response.status_code == 200, response.text
    return client


@pytest.mark.parametrize(
    ("types", "sent"),
    [
        ("workspace", ["workspace"]),
        ("workspace.provisioned", ["workspace.provisioned"]),  # recorded, never published
        ("runtime_service, workspace.realized.v1", ["runtime_service", "workspace.realized.v1"]),
        ("", None),
    ],
)
def test_the_filter_reaches_every_source(
    client: Client, bus: Any, board: dict[str, str], types: str, sent: list[str] | None
) -> None:
    row = _row("e1", "workspace.provisioned.v1", "Workspace provisioned")
    bus.replies[subjects.workspace_events("realizer")] = wire.page(row, total=1)
    response = client.get(f"{WS_URL}/events", params={"types": types}, headers=board)
    assert response.status_code == 200, response.text
    assert response.json()[0]["type"] == "workspace.provisioned.v1"
    assert response.json()[0]["label"] == "Workspace provisioned"
    asked = _asked(bus)
    assert len(asked) == 2  # the realizer and the supervisor, with the same filter
    assert all(q.types == sent for q in asked), asked


@pytest.mark.parametrize("types", ["Provisioned", "RunLeased", "workspace.vanished", "Workspace"])
def test_an_unknown_filter_is_400_and_asks_nobody(
    client: Client, bus: Any, board: dict[str, str], types: str
) -> None:
    response = client.get(f"{WS_URL}/events", params={"types": types}, headers=board)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_failed"
    assert body["details"]["fields"][0]["field"] == "types"
    assert "types without their version (workspace.realized) or aggregates" in body["error"]
    assert _asked(bus) == []


def test_a_stored_class_name_is_answered_with_its_type(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    response = client.get(f"{WS_URL}/events?types=RunLeased", headers=board)
    assert "did you mean workspace.run_leased?" in response.json()["error"]


def test_the_timeline_takes_the_filter_and_shows_labels(signed_in: Client, bus: Any) -> None:
    bus.replies[subjects.workspace_events("realizer")] = wire.page(
        _row("e1", "workspace.provisioned.v1", "Workspace provisioned"),
        _row("e2", "workspace.run_leased.v1"),  # no label sent: the page names it all the same
    )
    page = f"/workspaces/{wire.WS}?fragment=timeline&types=workspace"
    timeline = signed_in.get(page).text
    asked = _asked(bus)
    assert asked
    assert all(q.types == ["workspace"] for q in asked), asked
    assert '<strong data-field="event-label">Workspace provisioned</strong>' in timeline
    assert '<code class="muted" data-field="event-type">workspace.provisioned.v1</code>' in timeline
    assert '<strong data-field="event-label">Workspace run leased</strong>' in timeline
    assert 'name="types" value="workspace"' in timeline  # the box keeps the filter
    assert "Show every event" in timeline


def test_the_timeline_names_an_unknown_filter_as_its_error(signed_in: Client, bus: Any) -> None:
    timeline = signed_in.get(f"/workspaces/{wire.WS}?fragment=timeline&types=Spawned").text
    assert "This section could not be loaded: Unknown event filter" in timeline
    assert "did you mean runtime_service.spawned?" in timeline
    assert _asked(bus) == []
