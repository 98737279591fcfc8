"""Agents, wakes, runs, run logs, runtime health and the heartbeat context over HTTP against a
fake bus: each route's request to its service, its answer, and its errors (400 before anything
is sent, 403 by key kind, 404 for another company, the services' refusals and 504 passed on)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication
from api_gateway.inbox import controller_inbox
from contracts import heartbeat_subjects as hb
from contracts import workspace_subjects as ws
from contracts.agents import (
    CancelRun,
    CreateAgent,
    DeleteAgent,
    GetRun,
    ListAgents,
    ListRuns,
    UpdateAgent,
    WakeAgent,
)
from contracts.base import ErrorReply, Ok
from contracts.runtime_subjects import RUNTIME_STATE
from contracts.slots import GetRunLog, GetSlotHealth

_spec = importlib.util.spec_from_file_location(
    "heartbeat_fixtures", Path(__file__).parent / "heartbeat_fixtures.py"
)
assert _spec
assert _spec.loader
fx: Any = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fx
_spec.loader.exec_module(fx)
wire = fx.wire

Client = TestClient[Any]
TIMEOUT = ErrorReply(code="timeout", message="The controller did not answer in time.", status=504)
AGENT_URL = f"/api/agents/{fx.AGENT}"
RUN_URL = f"/api/runs/{fx.RUN}"
CONTEXT_URL = f"/api/issues/{wire.ISSUE}/heartbeat-context"


def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "code", "details"}
    assert body["code"] == code
    return body


@pytest.fixture
def agent_key(client: Client, bus: Any, company: str, board: dict[str, str]) -> dict[str, str]:
    bus.replies[hb.AGENT_GET] = wire.ok(fx.agent(company))
    created = client.post(
        f"/api/companies/{company}/api-keys",
        json={"name": "coder", "kind": "agent", "agentId": fx.AGENT},
        headers=board,
    )
    assert created.status_code == 201, created.text
    bus.sent.clear()
    return {"Authorization": f"Bearer {created.json()['key']}"}


def test_an_agent_deleted_between_its_confirmation_and_the_keys_creation_gets_no_key(
    client: Client, bus: Any, company: str, board: dict[str, str], application: GatewayApplication
) -> None:
    inbox = partial(controller_inbox, application)

    def confirmed_then_deleted(_query: Any) -> Any:
        # The controller confirms the agent; its delete reaches the gateway's inbox just after.
        inbox(fx.agent_deleted(company), fx.tracking())
        return wire.ok(fx.agent(company))

    bus.replies[hb.AGENT_GET] = confirmed_then_deleted
    response = client.post(
        f"/api/companies/{company}/api-keys",
        json={"name": "coder", "kind": "agent", "agentId": fx.AGENT},
        headers=board,
    )
    body = _error(response, 404, "not_found")
    assert body["details"] == {"agentId": fx.AGENT}
    assert not [k for k in application.keys_by_id.values() if k.agent_id == fx.AGENT]


@pytest.fixture
def other_board(
    make_company: Any, make_board_key: Any
) -> dict[str, str]:  # a board key of another company
    other = make_company("Other Inc")["id"]
    return {"Authorization": f"Bearer {make_board_key(other)}"}


# -- agents ------------------------------------------------------------------------------------


def test_create_agent_sends_the_body_and_answers_201(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies[hb.AGENT_CREATE] = wire.ok(fx.agent(company))
    body = {
        "name": "coder",
        "adapterType": "process",
        "adapterConfig": {"command": ["python3", "agent.py"], "timeoutSec": 600},
        "trustLevel": "trusted",
        "maxConcurrentRuns": 2,
        "heartbeatIntervalSec": 60,
    }
    response = client.post(f"/api/companies/{company}/agents", json=body, headers=board)
    assert response.status_code == 201, response.text
    assert response.json()["id"] == fx.AGENT
    command = bus.sent[0].message
    assert isinstance(command, CreateAgent)
    assert (command.name, command.adapter_type, command.trust_level) == (
        "coder",
        "process",
        "trusted",
    )
    assert command.adapter_config == body["adapterConfig"]
    assert (command.max_concurrent_runs, command.heartbeat_interval_sec) == (2, 60)
    assert command.principal.company_id == company


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "adapterType": "shell", "adapterConfig": {}}, "adapterType"),
        ({"name": "x", "adapterType": "process"}, "adapterConfig"),
        ({"name": "", "adapterType": "process", "adapterConfig": {}}, "name"),
        ({"name": "x", "adapterType": "http", "adapterConfig": {}, "colour": 1}, "colour"),
        ({"name": "x", "adapterType": "http", "adapterConfig": {}, "maxConcurrentRuns": 0}, None),
    ],
)
def test_a_bad_agent_body_is_400_and_sends_nothing(
    client: Client,
    bus: Any,
    company: str,
    board: dict[str, str],
    body: dict[str, Any],
    field: str | None,
) -> None:
    response = client.post(f"/api/companies/{company}/agents", json=body, headers=board)
    error = _error(response, 400, "validation_failed")
    if field:
        assert [one["field"] for one in error["details"]["fields"]] == [field]
    assert bus.sent == []


def test_the_controllers_refusal_of_an_adapter_config_is_passed_on(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies[hb.AGENT_CREATE] = ErrorReply(
        code="validation_failed",
        message="adapterConfig.command is required.",
        status=400,
        details={"fields": [{"field": "adapterConfig.command"}]},
    )
    body = {"name": "x", "adapterType": "process", "adapterConfig": {}}
    response = client.post(f"/api/companies/{company}/agents", json=body, headers=board)
    error = _error(response, 400, "validation_failed")
    assert error["details"]["fields"] == [{"field": "adapterConfig.command"}]


def test_only_board_keys_manage_agents(
    client: Client,
    bus: Any,
    company: str,
    admin: dict[str, str],
    agent_key: dict[str, str],
    other_board: dict[str, str],
) -> None:
    body = {"name": "x", "adapterType": "process", "adapterConfig": {"command": ["true"]}}
    url = f"/api/companies/{company}/agents"
    _error(client.post(url, json=body, headers=agent_key), 403, "forbidden")
    _error(client.post(url, json=body, headers=admin), 403, "forbidden")
    _error(client.patch(AGENT_URL, json={"name": "y"}, headers=agent_key), 403, "forbidden")
    _error(client.delete(AGENT_URL, headers=agent_key), 403, "forbidden")
    _error(client.post(url, json=body, headers=other_board), 404, "not_found")
    _error(client.get(url, headers=other_board), 404, "not_found")
    assert bus.sent == []


def test_list_agents_pages_with_a_total(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies[hb.AGENT_LIST] = wire.page(fx.agent(company), total=7)
    response = client.get(f"/api/companies/{company}/agents?limit=1&offset=3", headers=board)
    assert response.status_code == 200, response.text
    assert [row["id"] for row in response.json()] == [fx.AGENT]
    assert response.headers["X-Total-Count"] == "7"
    query = bus.sent[0].message
    assert isinstance(query, ListAgents)
    assert (query.limit, query.offset) == (1, 3)
    bad = client.get(f"/api/companies/{company}/agents?limit=0", headers=board)
    _error(bad, 400, "validation_failed")
    assert len(bus.sent) == 1


def test_get_update_delete_an_agent(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies[hb.AGENT_GET] = wire.ok(fx.agent(company))
    bus.replies[hb.AGENT_UPDATE] = wire.ok(fx.agent(company, name="renamed"))
    bus.replies[hb.AGENT_DELETE] = Ok(result=None)
    assert client.get(AGENT_URL, headers=board).json()["name"] == "coder"
    updated = client.patch(
        AGENT_URL, json={"name": "renamed", "heartbeatIntervalSec": None}, headers=board
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["name"] == "renamed"
    command = bus.sent[1].message
    assert isinstance(command, UpdateAgent)
    assert (command.agent_id, command.name, command.heartbeat_interval_sec) == (
        fx.AGENT,
        "renamed",
        None,
    )
    assert command.trust_level.__class__.__name__ == "UnsetType"  # absent stays absent
    deleted = client.delete(AGENT_URL, headers=board)
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert isinstance(bus.sent[2].message, DeleteAgent)
    bus.replies[hb.AGENT_DELETE] = ErrorReply(code="not_found", message="No agent.", status=404)
    _error(client.delete(AGENT_URL, headers=board), 404, "not_found")
    bus.replies[hb.AGENT_GET] = TIMEOUT
    _error(client.get(AGENT_URL, headers=board), 504, "timeout")


@pytest.mark.parametrize("path", ["wakeup", "wake"])
def test_a_wake_answers_202_with_the_run(
    client: Client, bus: Any, company: str, board: dict[str, str], path: str
) -> None:
    bus.replies[hb.AGENT_WAKE] = wire.ok(
        {"runId": fx.RUN, "wakeupRequestId": fx.WAKE, "status": "coalesced"}
    )
    body = {
        "source": "automation",
        "reason": "nightly",
        "issueId": wire.ISSUE,
        "payload": {"k": [1]},
        "idempotencyKey": "nightly-1",
    }
    response = client.post(f"{AGENT_URL}/{path}", json=body, headers=board)
    assert response.status_code == 202, response.text
    assert response.json() == {"runId": fx.RUN, "wakeupRequestId": fx.WAKE, "status": "coalesced"}
    command = bus.sent[0].message
    assert isinstance(command, WakeAgent)
    assert (command.agent_id, command.source, command.reason, command.issue_id) == (
        fx.AGENT,
        "automation",
        "nightly",
        wire.ISSUE,
    )
    assert (command.payload, command.idempotency_key) == ({"k": [1]}, "nightly-1")
    # No body at all is an on-demand wake.
    assert client.post(f"{AGENT_URL}/{path}", headers=board).status_code == 202
    assert bus.sent[1].message.source == "on_demand"
    _error(
        client.post(f"{AGENT_URL}/{path}", json={"source": "cron"}, headers=board),
        400,
        "validation_failed",
    )
    assert len(bus.sent) == 2


@pytest.mark.parametrize(
    ("body", "source", "reason"),
    [
        ({"wakeReason": "on_demand"}, "on_demand", "on_demand"),  # the reference's guide
        ({"wakeReason": "assignment"}, "assignment", "assignment"),
        ({"wakeReason": "issue_assigned"}, "on_demand", "issue_assigned"),
        ({"wakeReason": "timer", "source": "automation"}, "automation", "timer"),
        ({"wakeReason": "timer", "reason": "nightly"}, "timer", "nightly"),
    ],
)
def test_the_references_wake_reason_is_a_source_or_a_reason(
    client: Client,
    bus: Any,
    company: str,
    board: dict[str, str],
    body: dict[str, str],
    source: str,
    reason: str,
) -> None:
    bus.replies[hb.AGENT_WAKE] = wire.ok(
        {"runId": fx.RUN, "wakeupRequestId": fx.WAKE, "status": "queued"}
    )
    response = client.post(f"{AGENT_URL}/wake", json=body, headers=board)
    assert response.status_code == 202, response.text
    command = bus.sent[0].message
    assert (command.source, command.reason) == (source, reason)


def test_an_agent_key_wakes_and_the_controller_decides_which_agent(
    client: Client, bus: Any, company: str, agent_key: dict[str, str]
) -> None:
    bus.replies[hb.AGENT_WAKE] = ErrorReply(
        code="forbidden", message="An agent wakes only itself.", status=403
    )
    response = client.post(f"/api/agents/{fx.OTHER_AGENT}/wakeup", json={}, headers=agent_key)
    _error(response, 403, "forbidden")
    principal = bus.sent[0].message.principal
    assert (principal.actor.type, principal.actor.id) == ("agent", fx.AGENT)


# -- runs --------------------------------------------------------------------------------------


def test_get_and_cancel_a_run(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies[hb.RUN_GET] = wire.ok(fx.run(company, stdoutExcerpt="hello\n"))
    bus.replies[hb.RUN_CANCEL] = wire.ok(fx.run(company, cancelRequested=True))
    got = client.get(RUN_URL, headers=board)
    assert got.status_code == 200, got.text
    assert (got.json()["status"], got.json()["stdoutExcerpt"]) == ("running", "hello\n")
    cancelled = client.post(f"{RUN_URL}/cancel", headers=board)
    assert cancelled.status_code == 202, cancelled.text
    assert cancelled.json()["cancelRequested"] is True
    assert isinstance(bus.sent[1].message, CancelRun)
    assert bus.sent[1].message.run_id == fx.RUN
    bus.replies[hb.RUN_CANCEL] = ErrorReply(
        code="run_finished", message="The run has finished.", status=409
    )
    _error(client.post(f"{RUN_URL}/cancel", headers=board), 409, "run_finished")
    bus.replies[hb.RUN_GET] = ErrorReply(code="not_found", message="No run.", status=404)
    _error(client.get(RUN_URL, headers=board), 404, "not_found")


def test_the_run_log_is_read_after_the_run_in_byte_ranges(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies[hb.RUN_GET] = wire.ok(fx.run(company))
    bus.replies[hb.SLOT_RUN_LOG] = wire.ok(
        {"runId": fx.RUN, "offset": 10, "length": 6, "size": 4096, "text": "line 2"}
    )
    response = client.get(f"{RUN_URL}/log?offset=10&length=6", headers=board)
    assert response.status_code == 200, response.text
    assert response.text == "line 2"
    assert response.headers["content-type"].startswith("text/plain")
    assert (
        response.headers["X-Total-Bytes"],
        response.headers["X-Log-Offset"],
        response.headers["X-Log-Length"],
    ) == ("4096", "10", "6")
    assert [sent.subject for sent in bus.sent] == [hb.RUN_GET, hb.SLOT_RUN_LOG]
    query = bus.sent[1].message
    assert isinstance(query, GetRunLog)
    assert (query.run_id, query.offset, query.length) == (fx.RUN, 10, 6)
    assert query.principal.company_id == company
    # Defaults: from the start, 256 KiB.
    client.get(f"{RUN_URL}/log", headers=board)
    assert (bus.sent[3].message.offset, bus.sent[3].message.length) == (0, 256 * 1024)


@pytest.mark.parametrize("query", ["length=262145", "length=0", "offset=-1", "offset=x"])
def test_a_run_log_range_out_of_bounds_is_400(
    client: Client, bus: Any, board: dict[str, str], query: str
) -> None:
    _error(client.get(f"{RUN_URL}/log?{query}", headers=board), 400, "validation_failed")
    assert bus.sent == []


def test_another_companys_run_log_is_404_and_the_supervisor_is_not_asked(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies[hb.RUN_GET] = ErrorReply(code="not_found", message="No such run.", status=404)
    bus.replies[hb.SLOT_RUN_LOG] = wire.ok(
        {"runId": fx.RUN, "offset": 0, "length": 0, "size": 0, "text": ""}
    )
    _error(client.get(f"{RUN_URL}/log", headers=board), 404, "not_found")
    assert [sent.subject for sent in bus.sent] == [hb.RUN_GET]


def test_list_runs_with_filters(
    client: Client, bus: Any, company: str, board: dict[str, str], other_board: dict[str, str]
) -> None:
    bus.replies[hb.RUN_LIST] = wire.page(fx.run(company), total=3)
    url = f"/api/companies/{company}/runs"
    response = client.get(
        f"{url}?agentId={fx.AGENT}&issueId={wire.ISSUE}&status=running&limit=1", headers=board
    )
    assert response.status_code == 200, response.text
    assert [row["id"] for row in response.json()] == [fx.RUN]
    assert response.headers["X-Total-Count"] == "3"
    query = bus.sent[0].message
    assert isinstance(query, ListRuns)
    assert (query.filters.agent_id, query.filters.issue_id, query.filters.status) == (
        fx.AGENT,
        wire.ISSUE,
        "running",
    )
    assert (query.limit, query.offset) == (1, 0)
    error = _error(client.get(f"{url}?status=done", headers=board), 400, "validation_failed")
    assert error["details"]["fields"][0]["field"] == "status"
    _error(client.get(f"{url}?status=running,failed", headers=board), 400, "validation_failed")
    _error(client.get(url, headers=other_board), 404, "not_found")
    assert len(bus.sent) == 1
    bus.replies[hb.RUN_LIST] = TIMEOUT
    _error(client.get(url, headers=board), 504, "timeout")


def test_runtime_health_comes_from_the_supervisor(
    client: Client, bus: Any, company: str, board: dict[str, str], other_board: dict[str, str]
) -> None:
    bus.replies[hb.SLOT_HEALTH] = wire.ok(fx.slot_health())
    url = f"/api/companies/{company}/tools/runtime-health"
    response = client.get(url, headers=board)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [(row["type"], row["capacity"], row["inUse"], row["healthy"]) for row in body] == [
        ("local_stdio", 4, 1, True),
        ("remote_http", None, 0, True),
    ]
    assert isinstance(bus.sent[0].message, GetSlotHealth)
    _error(client.get(url, headers=other_board), 404, "not_found")
    bus.replies.clear()
    _error(client.get(url, headers=board), 503, "service_unavailable")


# -- heartbeat context -------------------------------------------------------------------------


@pytest.fixture
def context_bus(bus: Any, company: str) -> Any:
    bus.replies[ws.ISSUE_GET] = wire.ok(wire.issue(company, executionWorkspaceId=wire.WS))
    bus.replies[ws.WORKSPACE_GET] = wire.ok(wire.workspace(company))
    bus.replies[RUNTIME_STATE] = wire.ok(
        {
            "runtimeServices": [
                {
                    "id": "svc-1",
                    "serviceName": "web",
                    "status": "running",
                    "port": 41007,
                    "url": "http://127.0.0.1:41007/",
                }
            ]
        }
    )
    bus.replies[hb.RUN_LIST] = wire.page(fx.run(company), total=4)
    bus.replies[hb.RUN_GET] = wire.ok(fx.run(company, stage="adapter_launch"))
    return bus


def test_the_heartbeat_context_of_a_board_key_has_the_newest_run(
    client: Client, context_bus: Any, company: str, board: dict[str, str]
) -> None:
    response = client.get(CONTEXT_URL, headers=board)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"issue", "currentExecutionWorkspace", "run", "generatedAt"}
    assert body["issue"]["id"] == wire.ISSUE
    workspace = body["currentExecutionWorkspace"]
    assert (workspace["id"], workspace["cwd"], workspace["branchName"], workspace["baseRef"]) == (
        wire.WS,
        "/home/u/.clipyard/worktrees/x/acme-1",
        "acme-1",
        "main",
    )
    assert workspace["status"] == "active"
    assert [s["url"] for s in workspace["runtimeServices"]] == ["http://127.0.0.1:41007/"]
    assert body["run"]["id"] == fx.RUN
    subjects = [sent.subject for sent in context_bus.sent]
    assert subjects[0] == ws.ISSUE_GET  # scoping first
    assert sorted(subjects[1:]) == sorted([ws.WORKSPACE_GET, RUNTIME_STATE, hb.RUN_LIST])
    (newest,) = [s.message for s in context_bus.sent if s.subject == hb.RUN_LIST]
    assert (newest.filters.issue_id, newest.limit) == (wire.ISSUE, 1)


def test_the_heartbeat_context_of_a_run_token_has_its_own_run(
    client: Client, application: GatewayApplication, context_bus: Any, company: str
) -> None:
    issued = asyncio.run(fx.mint(application, company))
    auth = {"Authorization": f"Bearer {issued.token}"}
    response = client.get(CONTEXT_URL, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["run"]["id"] == fx.RUN
    (own,) = [s.message for s in context_bus.sent if s.subject == hb.RUN_GET]
    assert isinstance(own, GetRun)
    assert own.run_id == fx.RUN
    assert hb.RUN_LIST not in [s.subject for s in context_bus.sent]
    # Each request carries the run-bound principal (the realizer scopes the issue by it).
    for sent in context_bus.sent:
        assert sent.message.principal.run_bound is True
        assert sent.message.principal.issue_id == wire.ISSUE
    # Another issue: the realizer refuses it (403 in the company, 404 beyond), and nothing more
    # is asked.
    context_bus.sent.clear()
    context_bus.replies[ws.ISSUE_GET] = ErrorReply(
        code="forbidden",
        message="This run's token may only touch the issue of its run.",
        status=403,
    )
    other = client.get(f"/api/issues/{fx.OTHER_AGENT}/heartbeat-context", headers=auth)
    _error(other, 403, "forbidden")
    assert [s.subject for s in context_bus.sent] == [ws.ISSUE_GET]


def test_the_heartbeat_context_without_a_workspace_or_run(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies[ws.ISSUE_GET] = wire.ok(wire.issue(company))
    bus.replies[hb.RUN_LIST] = wire.page()
    response = client.get(CONTEXT_URL, headers=board)
    assert response.status_code == 200, response.text
    assert response.json()["currentExecutionWorkspace"] is None
    assert response.json()["run"] is None
    assert [s.subject for s in bus.sent] == [ws.ISSUE_GET, hb.RUN_LIST]


def test_the_heartbeat_context_errors(
    client: Client, context_bus: Any, company: str, board: dict[str, str]
) -> None:
    # A silent supervisor: answered without runtime services, with a warning.
    del context_bus.replies[RUNTIME_STATE]
    response = client.get(CONTEXT_URL, headers=board)
    assert response.status_code == 200, response.text
    assert response.json()["currentExecutionWorkspace"]["runtimeServices"] == []
    assert "runtime" in response.headers["X-Clipyard-Warning"]
    # A silent controller: 504.
    context_bus.replies[hb.RUN_LIST] = TIMEOUT
    _error(client.get(CONTEXT_URL, headers=board), 504, "timeout")
    # Another company's issue: the realizer's 404, nothing else asked.
    context_bus.replies[ws.ISSUE_GET] = ErrorReply(code="not_found", message="No.", status=404)
    context_bus.sent.clear()
    _error(client.get(CONTEXT_URL, headers=board), 404, "not_found")
    assert [s.subject for s in context_bus.sent] == [ws.ISSUE_GET]


def test_the_openapi_document_has_the_heartbeat_operations(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    operations = {
        op["operationId"]: (path, method)
        for path, item in document["paths"].items()
        for method, op in item.items()
    }
    expected = {
        "createAgent": ("/api/companies/{company_id}/agents", "post"),
        "listAgents": ("/api/companies/{company_id}/agents", "get"),
        "getAgent": ("/api/agents/{agent_id}", "get"),
        "updateAgent": ("/api/agents/{agent_id}", "patch"),
        "deleteAgent": ("/api/agents/{agent_id}", "delete"),
        "wakeAgent": ("/api/agents/{agent_id}/wakeup", "post"),
        "wakeAgentAlias": ("/api/agents/{agent_id}/wake", "post"),
        "getRun": ("/api/runs/{run_id}", "get"),
        "cancelRun": ("/api/runs/{run_id}/cancel", "post"),
        "getRunLog": ("/api/runs/{run_id}/log", "get"),
        "listRuns": ("/api/companies/{company_id}/runs", "get"),
        "getRuntimeHealth": ("/api/companies/{company_id}/tools/runtime-health", "get"),
        "getHeartbeatContext": ("/api/issues/{issue_id}/heartbeat-context", "get"),
    }
    for operation_id, where in expected.items():
        assert operations.get(operation_id) == where, operation_id
        path, method = where
        op = document["paths"][path][method]
        assert op.get("description") or op.get("summary"), operation_id
        assert "401" in op["responses"], operation_id
    key_doc = document["paths"]["/api/companies/{company_id}/api-keys"]["post"]["description"]
    assert "agentId" in key_doc
    assert "404" in key_doc
