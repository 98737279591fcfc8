"""``GET /api/operations/{id}`` and bus replies as HTTP: 200, 202, error pass-through, 504."""

from __future__ import annotations

import asyncio
from typing import Any

from litestar import get
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.testing import TestClient

from api_gateway.controllers.common import answer
from api_gateway.http.dependencies import Gateway
from api_gateway.http.security import access
from contracts.base import Accepted, ErrorReply, Ok
from contracts.service import GetOperation
from servicekit.access import Action, Resource

Client = TestClient[Any]

REALIZER = "ws.qry.realizer.operation"
SUPERVISOR = "ws.qry.supervisor.operation"
OPERATION = {
    "id": "0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6",
    "kind": "workspace.realize",
    "status": "succeeded",
    "result": {"workspaceId": "w1"},
    "error": None,
    "workspaceOperationIds": ["wo-1", "wo-2"],
}


def _not_found(message: Any) -> ErrorReply:
    return ErrorReply(code="not_found", message="no such operation", status=404)


def test_the_owner_answers_and_the_principal_travels(
    client: Client, admin: dict[str, str], bus: Any
) -> None:
    bus.replies[REALIZER] = _not_found
    bus.replies[SUPERVISOR] = Ok(result=OPERATION)
    response = client.get("/api/operations/0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6", headers=admin)
    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in OPERATION} == OPERATION
    # Both owners were asked, with the operation id and the acting principal.
    assert sorted(s.subject for s in bus.sent) == [REALIZER, SUPERVISOR]
    for sent in bus.sent:
        assert isinstance(sent.message, GetOperation)
        assert sent.message.operation_id == "0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6"
        assert sent.message.principal.actor.type == "admin"


def test_the_first_ok_wins_without_waiting_for_a_slow_owner(
    client: Client, admin: dict[str, str], bus: Any
) -> None:
    async def never(message: Any) -> ErrorReply:
        await asyncio.sleep(30)
        raise AssertionError("should have been cancelled")

    bus.replies[REALIZER] = Ok(result=OPERATION)
    bus.replies[SUPERVISOR] = never
    response = client.get("/api/operations/0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6", headers=admin)
    assert response.status_code == 200


def test_nobody_knows_it_is_404(client: Client, admin: dict[str, str], bus: Any) -> None:
    bus.replies[REALIZER] = _not_found
    bus.replies[SUPERVISOR] = _not_found
    response = client.get("/api/operations/0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f9", headers=admin)
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_an_owner_that_is_down_makes_it_503_not_404(
    client: Client, admin: dict[str, str], bus: Any
) -> None:
    # The realizer is not running (no responders) and the supervisor does not know it: the
    # operation may well be the realizer's, so "not found" would be wrong.
    bus.replies[SUPERVISOR] = _not_found
    response = client.get("/api/operations/0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f9", headers=admin)
    assert response.status_code == 503
    assert response.json() == {
        "error": (
            "Operation 0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f9 may belong to workspace-realizer, which is not answering; "
            "check `clipyard status` and retry."
        ),
        "code": "service_unavailable",
        "details": {
            "operationId": "0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f9",
            "services": ["workspace-realizer"],
        },
    }


def test_an_owner_that_times_out_is_504(client: Client, admin: dict[str, str], bus: Any) -> None:
    bus.replies[REALIZER] = _not_found
    bus.replies[SUPERVISOR] = ErrorReply(
        code="timeout", message="no reply from ws.qry.supervisor.operation within 0.5 s", status=504
    )
    response = client.get("/api/operations/0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6", headers=admin)
    assert response.status_code == 504
    assert response.json() == {
        "error": "no reply from ws.qry.supervisor.operation within 0.5 s",
        "code": "timeout",
        "details": {},
    }


def test_operations_need_a_key(client: Client) -> None:
    assert client.get("/api/operations/0c0e1f2a-5b6c-4d7e-8f90-a1b2c3d4e5f6").status_code == 401


@get("/api/test-only/ask/{subject:str}", opt=access(Resource.OPERATION, Action.READ))
async def ask_route(subject: FromPath[str], gateway: NamedDependency[Gateway]) -> Any:
    """A route that forwards one bus request, as every future resource handler does."""
    return await answer(gateway, subject, {"probe": True})


def test_bus_replies_become_http_answers(client: Client, admin: dict[str, str], bus: Any) -> None:
    client.app.register(ask_route)
    bus.replies["ws.cmd.probe.ok"] = Ok(result={"x": 1})
    bus.replies["ws.cmd.probe.accepted"] = Accepted(operation_id="op-7")
    bus.replies["ws.cmd.probe.refused"] = ErrorReply(
        code="close_blocked",
        message="The workspace has unpushed work.",
        status=409,
        details={"reasons": ["unpushed"]},
    )
    ok = client.get("/api/test-only/ask/ws.cmd.probe.ok", headers=admin)
    assert (ok.status_code, ok.json()) == (200, {"x": 1})
    # Long work: 202 with the operation to poll.
    accepted = client.get("/api/test-only/ask/ws.cmd.probe.accepted", headers=admin)
    assert accepted.status_code == 202
    assert accepted.json() == {"operationId": "op-7", "status": "running"}
    # A service's refusal keeps its status, code, message and details.
    refused = client.get("/api/test-only/ask/ws.cmd.probe.refused", headers=admin)
    assert refused.status_code == 409
    assert refused.json() == {
        "error": "The workspace has unpushed work.",
        "code": "close_blocked",
        "details": {"reasons": ["unpushed"]},
    }
    # A service that is not running: 503 from the no-responders reply, never a crash.
    missing = client.get("/api/test-only/ask/ws.cmd.probe.nobody", headers=admin)
    assert (missing.status_code, missing.json()["code"]) == (503, "service_unavailable")
    # The request carried the gateway's request timeout.
    assert {s.timeout for s in bus.sent} == {0.5}
