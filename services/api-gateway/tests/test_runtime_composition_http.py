"""The supervisor's facts on workspace reads (detail, close readiness) and the workspace record
merged from the realizer and the supervisor (operations, one operation, its output, events),
against a fake bus; a supervisor that does not answer never fails a read."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts.base import ErrorReply
from contracts.execution_commands import (
    GetWorkspaceEvents,
    GetWorkspaceOperationOutput,
    ListWorkspaceOperations,
)
from contracts.runtime_commands import GetRuntimeState

_spec = importlib.util.spec_from_file_location(
    "runtime_fixtures", Path(__file__).parent / "runtime_fixtures.py"
)
assert _spec
assert _spec.loader
rt: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)
wire = rt.wire

Client = TestClient[Any]
WS_URL = f"/api/execution-workspaces/{wire.WS}"
STATE = "ws.qry.runtime_service.state"
WARNING = "X-Clipyard-Warning"


def _at(minute: int) -> str:
    return f"2026-11-29T12:{minute:02d}:00Z"


def test_the_detail_shows_the_supervisor_services_and_provisioning_probed_now(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.workspace.get"] = wire.ok(
        wire.workspace(company, runtimeProvisioning={"state": "deferred"})
    )
    bus.replies[STATE] = wire.ok(rt.state(company))
    response = client.get(WS_URL, headers=board)
    assert response.status_code == 200, response.text
    assert WARNING not in response.headers
    body = response.json()
    (service,) = body["runtimeServices"]
    assert (service["id"], service["status"], service["port"]) == (rt.SERVICE, "running", 41007)
    assert service["healthStatus"] == "healthy"
    assert body["runtimeProvisioning"] == {
        "state": "provisioned",
        "at": wire.NOW,
        "operationId": rt.SUP_OP,
    }
    (query,) = [one.message for one in bus.sent if one.subject == STATE]
    assert isinstance(query, GetRuntimeState)
    assert (query.workspace_id, query.project_workspace_id, query.probe_health) == (
        wire.WS,
        None,
        True,
    )
    assert query.principal.company_id == company


@pytest.mark.parametrize(
    "reply",
    [
        None,  # no responders: service_unavailable
        ErrorReply(code="timeout", message="No answer within 0.5 s.", status=504),
        wire.ok({"runtimeServices": [{"id": 1}]}),  # an answer the gateway cannot read
    ],
)
def test_a_supervisor_that_does_not_answer_leaves_the_detail_answered_with_a_warning(
    client: Client,
    bus: Any,
    company: str,
    board: dict[str, str],
    caplog: pytest.LogCaptureFixture,
    reply: Any,
) -> None:
    bus.replies["ws.qry.workspace.get"] = wire.ok(
        wire.workspace(company, runtimeProvisioning={"state": "deferred"}, commitsAhead=3)
    )
    if reply is not None:
        bus.replies[STATE] = reply
    with caplog.at_level(logging.WARNING):
        response = client.get(WS_URL, headers=board)
    assert response.status_code == 200, response.text
    body = response.json()
    # The realizer's facts as they are; nothing omitted.
    assert (body["commitsAhead"], body["runtimeServices"]) == (3, [])
    assert body["runtimeProvisioning"]["state"] == "deferred"
    assert "runtime-supervisor did not answer" in response.headers[WARNING]
    assert any("runtime-supervisor did not answer" in r.getMessage() for r in caplog.records)
    assert STATE in [one.subject for one in bus.sent]


def test_the_realizer_refusal_wins_over_the_supervisor_answer(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.workspace.get"] = ErrorReply(
        code="not_found", message=f"There is no execution workspace {wire.WS}.", status=404
    )
    bus.replies[STATE] = wire.ok(rt.state(company))
    response = client.get(WS_URL, headers=board)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert rt.SERVICE not in response.text


def test_close_readiness_shows_the_supervisor_services_without_probing(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.workspace.close_readiness"] = wire.ok(
        {"workspaceId": wire.WS, "state": "ready", "plannedActions": [
            {"kind": "stop_runtime_services", "label": "Stop runtime services"}]}
    )  # fmt: skip
    bus.replies[STATE] = wire.ok(rt.state(company))
    response = client.get(f"{WS_URL}/close-readiness", headers=board)
    assert response.status_code == 200, response.text
    assert WARNING not in response.headers
    assert [s["id"] for s in response.json()["runtimeServices"]] == [rt.SERVICE]
    (query,) = [one.message for one in bus.sent if one.subject == STATE]
    assert query.probe_health is False
    # Not answering: the realizer's readiness as it is, with the warning.
    del bus.replies[STATE]
    response = client.get(f"{WS_URL}/close-readiness", headers=board)
    assert response.status_code == 200
    assert response.json()["runtimeServices"] == []
    assert response.json()["plannedActions"][0]["kind"] == "stop_runtime_services"
    assert "runtime-supervisor" in response.headers[WARNING]


def test_operations_of_both_services_are_merged_by_start_time(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    realizer = [wire.operation(company, id=f"r{m}", startedAt=_at(m)) for m in (1, 3, 6)]
    supervisor = [rt.sup_operation(company, id=f"s{m}", startedAt=_at(m)) for m in (2, 4, 5)]
    bus.replies["ws.qry.realizer.workspace_operations"] = lambda q: wire.page(
        *realizer[: q.limit], total=3
    )
    bus.replies["ws.qry.supervisor.workspace_operations"] = lambda q: wire.page(
        *supervisor[: q.limit], total=3
    )
    response = client.get(f"{WS_URL}/workspace-operations", headers=board)
    assert response.status_code == 200, response.text
    assert [row["id"] for row in response.json()] == ["r1", "s2", "r3", "s4", "s5", "r6"]
    assert [row["source"] for row in response.json()][:2] == ["realizer", "supervisor"]
    assert response.headers["X-Total-Count"] == "6"
    assert WARNING not in response.headers
    # A page in the middle: each source is asked for its first offset + limit rows.
    response = client.get(f"{WS_URL}/workspace-operations?limit=2&offset=2", headers=board)
    assert [row["id"] for row in response.json()] == ["r3", "s4"]
    windows = [one.message for one in bus.sent[-2:]]
    assert all(isinstance(one, ListWorkspaceOperations) for one in windows)
    assert {(one.limit, one.offset, one.workspace_id) for one in windows} == {(4, 0, wire.WS)}
    assert {one.subject for one in bus.sent[-2:]} == {
        "ws.qry.realizer.workspace_operations",
        "ws.qry.supervisor.workspace_operations",
    }


@pytest.mark.parametrize("code", ["service_unavailable", "timeout"])
def test_a_source_that_does_not_answer_is_left_out_of_the_list_with_a_warning(
    client: Client, bus: Any, company: str, board: dict[str, str], code: str
) -> None:
    bus.replies["ws.qry.realizer.workspace_operations"] = wire.page(
        wire.operation(company), total=1
    )
    if code != "service_unavailable":  # else unscripted: no responders
        bus.replies["ws.qry.supervisor.workspace_operations"] = ErrorReply(
            code=code, message="No answer.", status=504
        )
    response = client.get(f"{WS_URL}/workspace-operations", headers=board)
    assert response.status_code == 200, response.text
    assert [row["id"] for row in response.json()] == [wire.OP]
    assert response.headers["X-Total-Count"] == "1"
    assert f"runtime-supervisor ({code})" in response.headers[WARNING]


def test_a_supervisor_without_the_workspace_adds_no_rows_and_no_warning(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.realizer.workspace_operations"] = wire.page(wire.operation(company))
    bus.replies["ws.qry.supervisor.workspace_operations"] = ErrorReply(
        code="not_found", message="No such workspace.", status=404
    )
    response = client.get(f"{WS_URL}/workspace-operations", headers=board)
    assert response.status_code == 200
    assert len(response.json()) == 1
    assert WARNING not in response.headers


def test_the_realizer_refusal_is_the_list_answer(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.realizer.workspace_operations"] = ErrorReply(
        code="not_found", message=f"There is no execution workspace {wire.WS}.", status=404
    )
    bus.replies["ws.qry.supervisor.workspace_operations"] = wire.page(rt.sup_operation(company))
    response = client.get(f"{WS_URL}/workspace-operations", headers=board)
    assert response.status_code == 404
    assert rt.SUP_OP not in response.text
    # The realizer not answering fails the list too (it owns the workspace).
    del bus.replies["ws.qry.realizer.workspace_operations"]
    assert client.get(f"{WS_URL}/workspace-operations", headers=board).status_code == 503


def test_a_supervisor_operation_detail_and_output_are_found(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    absent = ErrorReply(code="not_found", message="There is no such operation.", status=404)
    bus.replies["ws.qry.realizer.workspace_operation"] = absent
    bus.replies["ws.qry.realizer.workspace_operation_output"] = absent
    bus.replies["ws.qry.supervisor.workspace_operation"] = wire.ok(
        {**rt.sup_operation(company), "stdoutExcerpt": "Serving HTTP", "truncated": True}
    )
    bus.replies["ws.qry.supervisor.workspace_operation_output"] = wire.ok(
        {"data": b"job output\n", "offset": 0, "totalBytes": 300000}
    )
    detail = client.get(f"/api/workspace-operations/{rt.SUP_OP}", headers=board)
    assert detail.status_code == 200, detail.text
    assert (detail.json()["source"], detail.json()["truncated"]) == ("supervisor", True)
    output = client.get(f"/api/workspace-operations/{rt.SUP_OP}/output?length=11", headers=board)
    assert output.status_code == 200, output.text
    assert output.text == "job output\n"
    assert output.headers["X-Total-Bytes"] == "300000"
    asked = [one for one in bus.sent if isinstance(one.message, GetWorkspaceOperationOutput)]
    assert {one.subject for one in asked} == {
        "ws.qry.realizer.workspace_operation_output",
        "ws.qry.supervisor.workspace_operation_output",
    }


def test_an_operation_found_by_one_source_is_answered_even_if_the_other_is_down(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.realizer.workspace_operation"] = wire.ok(wire.operation(company))
    response = client.get(f"/api/workspace-operations/{wire.OP}", headers=board)
    assert response.status_code == 200, response.text
    assert response.json()["source"] == "realizer"


def test_an_unknown_operation_while_the_supervisor_is_down_is_503_not_a_guess(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.realizer.workspace_operation"] = ErrorReply(
        code="not_found", message="There is no workspace operation x.", status=404
    )
    response = client.get(
        "/api/workspace-operations/00000000-0000-4000-8000-00000000000a", headers=board
    )
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "service_unavailable"
    assert body["details"]["services"] == ["runtime-supervisor"]
    assert "runtime-supervisor" in body["error"]
    # Another error of a source is the answer (a timeout is not "not found").
    bus.replies["ws.qry.supervisor.workspace_operation"] = ErrorReply(
        code="timeout", message="No answer.", status=504
    )
    assert (
        client.get(
            "/api/workspace-operations/00000000-0000-4000-8000-00000000000a", headers=board
        ).status_code
        == 504
    )


def test_events_of_both_services_are_merged_by_time(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    def event(source: str, minute: int, kind: str) -> dict[str, Any]:
        return {"eventId": f"{source}-{minute}", "type": kind, "source": source,
                "aggregateId": wire.WS if source == "realizer" else rt.SERVICE,
                "aggregateVersion": minute, "occurredAt": _at(minute), "data": {}}  # fmt: skip

    bus.replies["ws.qry.realizer.workspace_events"] = wire.page(
        event("realizer", 1, "workspace.realized.v1"),
        event("realizer", 5, "workspace.status_changed.v1"),
        total=2,
    )
    bus.replies["ws.qry.supervisor.workspace_events"] = wire.page(
        event("supervisor", 2, "runtime_service.started.v1"),
        event("supervisor", 3, "runtime_service.stopped.v1"),
        total=2,
    )
    response = client.get(f"{WS_URL}/events?limit=3", headers=board)
    assert response.status_code == 200, response.text
    assert [row["eventId"] for row in response.json()] == [
        "realizer-1",
        "supervisor-2",
        "supervisor-3",
    ]
    assert response.headers["X-Total-Count"] == "4"
    windows = [one.message for one in bus.sent]
    assert all(isinstance(one, GetWorkspaceEvents) for one in windows)
    assert {(one.limit, one.offset) for one in windows} == {(3, 0)}
