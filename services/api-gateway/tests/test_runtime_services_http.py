"""Runtime control and logs over HTTP against a fake bus: the routes, their checks before the bus
(unknown action: reference case 64; the body; X-Run-Id), the supervisor's refusals passed through
(422, 409 with the lease owner), 202 for long work, the project-workspace variants, the rights,
and the OpenAPI document."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication
from api_gateway.domain import ApiKey, hash_secret, new_key
from contracts.base import Accepted, ErrorReply
from contracts.execution_commands import GetExecutionWorkspace
from contracts.runtime_commands import ControlRuntime, GetRuntimeServiceLog
from contracts.workspace_commands import GetProjectWorkspace
from contracts.workspace_config import ExecutionWorkspaceConfig, RuntimeConfig

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
PWS_URL = f"/api/projects/{wire.PROJECT}/workspaces/{wire.PWS}"
NODE = "node-b"
CONTROL = f"ws.cmd.runtime_service.control.{NODE}"
GET_WS = "ws.qry.workspace.get"
GET_PWS = "ws.qry.project_workspace.get"
READ = [GET_WS, GET_PWS]
"""What the gateway reads before it acts: the workspace and the project workspace it inherits
from (their configurations go to the supervisor as ``realizerFacts``)."""
STATE = "ws.qry.runtime_service.state"
LOG = "ws.qry.runtime_service.log"


OWN_CONFIG = {"provisionCommand": "make setup"}
PROJECT_RUNTIME = {"services": [{"name": "web", "command": "npm run dev"}]}


def _full(wire_config: dict[str, Any], kind: type[Any]) -> Any:
    """A configuration as it travels: every field, defaults included."""
    return msgspec.to_builtins(msgspec.convert(wire_config, kind))


def _control(sent: list[Any]) -> ControlRuntime:
    (command,) = [one.message for one in sent if one.subject == CONTROL]
    assert isinstance(command, ControlRuntime)
    return command


@pytest.fixture
def scripted(bus: Any, company: str) -> Any:
    """The realizer knows the workspace (on ``node-b``); the supervisor answers a start."""
    bus.replies[GET_WS] = wire.ok(wire.workspace(company, nodeId=NODE, config=OWN_CONFIG))
    bus.replies[GET_PWS] = wire.ok(wire.project_workspace(company, runtimeConfig=PROJECT_RUNTIME))
    bus.replies[CONTROL] = wire.ok(rt.control_result(company))
    bus.replies[STATE] = wire.ok(rt.state(company))
    return bus


@pytest.fixture
def agent(application: GatewayApplication, company: str) -> dict[str, str]:
    """Headers of an agent key of ``company`` (issued through the domain: the HTTP use case
    refuses agent keys until the heartbeat controller exists)."""
    key = new_key("agent")
    issued = ApiKey.issue(
        company_id=company, name="bot", kind="agent", agent_id="agent-7", key_hash=hash_secret(key)
    )
    application.save(issued)
    return {"Authorization": f"Bearer {key}"}


def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "code", "details"}
    assert body["code"] == code
    return body


@pytest.mark.parametrize("alias", ["runtime-services", "runtime-commands"])
@pytest.mark.parametrize(
    ("given", "action"), [("start", "start"), ("STOP", "stop"), ("Restart", "restart")]
)
def test_an_action_goes_to_the_workspace_node_and_answers_the_workspace_read_again(
    client: Client,
    scripted: Any,
    company: str,
    board: dict[str, str],
    alias: str,
    given: str,
    action: str,
) -> None:
    response = client.post(
        f"{WS_URL}/{alias}/{given}", json={"workspaceCommandId": "service:web"}, headers=board
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"workspace", "operation"}
    assert body["operation"]["id"] == rt.SUP_OP
    assert body["operation"]["source"] == "supervisor"
    # The workspace is the detail, read while the supervisor acted, with the facts the
    # supervisor answered the action with laid over it.
    assert body["workspace"]["id"] == wire.WS
    assert [s["url"] for s in body["workspace"]["runtimeServices"]] == ["http://127.0.0.1:41007/"]
    assert body["workspace"]["runtimeProvisioning"]["state"] == "provisioned"
    subjects = [sent.subject for sent in scripted.sent]
    # The record first (404 for another company's; no git), then the action and the detail.
    assert subjects[:2] == READ
    assert sorted(subjects[2:]) == sorted([CONTROL, GET_WS])
    reads = [sent.message for sent in scripted.sent if sent.subject == GET_WS]
    assert [read.delivery for read in reads] == [False, True]
    command = _control(scripted.sent)
    # What the realizer said goes along: the supervisor acts once its copies say the same.
    facts = msgspec.to_builtins(command.realizer_facts)
    assert facts == {
        "workspaceConfig": _full(OWN_CONFIG, ExecutionWorkspaceConfig),
        "projectRuntimeConfig": _full(PROJECT_RUNTIME, RuntimeConfig),
        "lifecycleGeneration": 0,
    }
    assert (command.action, command.workspace_id, command.project_workspace_id) == (
        action,
        wire.WS,
        None,
    )
    assert (command.workspace_command_id, command.runtime_service_id, command.service_index) == (
        "service:web",
        None,
        None,
    )
    assert command.principal.company_id == company
    assert command.principal.actor.type == "board"
    # The supervisor's facts came with its answer: it is not asked again.
    assert STATE not in subjects


def test_run_names_a_job_and_every_body_field_reaches_the_supervisor(
    client: Client, scripted: Any, board: dict[str, str]
) -> None:
    body = {"workspaceCommandId": "job:migrate", "runtimeServiceId": rt.SERVICE, "serviceIndex": 0}
    response = client.post(f"{WS_URL}/runtime-commands/RUN", json=body, headers=board)
    assert response.status_code == 200, response.text
    command = _control(scripted.sent)
    assert command.action == "run"
    assert (command.workspace_command_id, command.runtime_service_id, command.service_index) == (
        "job:migrate",
        rt.SERVICE,
        0,
    )


@pytest.mark.parametrize("content", [None, b"{}", b"null"])
def test_an_empty_body_acts_on_every_service(
    client: Client, scripted: Any, board: dict[str, str], content: bytes | None
) -> None:
    headers = {**board, "Content-Type": "application/json"} if content is not None else board
    response = client.post(f"{WS_URL}/runtime-services/stop", content=content, headers=headers)
    assert response.status_code == 200, response.text
    command = _control(scripted.sent)
    encoded = msgspec.json.decode(msgspec.json.encode(command))
    assert encoded["action"] == "stop"
    assert encoded["workspaceCommandId"] is None
    assert encoded["runtimeServiceId"] is None
    assert encoded["serviceIndex"] is None


@pytest.mark.parametrize(
    "url",
    [
        f"{WS_URL}/runtime-services/explode",
        f"{WS_URL}/runtime-commands/repair",
        f"{WS_URL}/runtime-services/start-all",
        f"{PWS_URL}/runtime-services/explode",
        f"{PWS_URL}/runtime-commands/Explode",
    ],
)
def test_case64_an_unknown_action_is_404_listing_the_actions_without_a_bus_call(
    client: Client, bus: Any, board: dict[str, str], url: str
) -> None:
    # Even with a malformed body: the action is checked before the body is read.
    for body in ({"workspaceCommandId": "service:web"}, {"serviceIndex": -1}):
        response = client.post(url, json=body, headers=board)
        error = _error(response, 404, "not_found")
        assert "start, stop, restart, run" in error["error"]
        assert error["details"]["actions"] == ["start", "stop", "restart", "run"]
        assert error["details"]["action"] == url.rsplit("/", 1)[1]
    assert bus.sent == []


def test_case64_a_job_with_start_and_a_service_with_run_are_422_from_the_supervisor(
    client: Client, scripted: Any, board: dict[str, str]
) -> None:
    refusals = [
        ("start", "job:migrate", 'Workspace job "migrate" can only be run.'),
        ("run", "service:web", 'Workspace service "web" should be started or restarted, not run.'),
    ]
    for action, command_id, message in refusals:
        scripted.replies[CONTROL] = ErrorReply(code="unprocessable", message=message, status=422)
        sent = len(scripted.sent)
        response = client.post(
            f"{WS_URL}/runtime-services/{action}",
            json={"workspaceCommandId": command_id},
            headers=board,
        )
        error = _error(response, 422, "unprocessable")
        assert error["error"] == message
        # Read, act; nothing is read again after a refusal.
        assert [one.subject for one in scripted.sent[sent:]] == [*READ, CONTROL]


def test_a_lease_conflict_is_409_with_the_owner_in_details(
    client: Client, scripted: Any, board: dict[str, str]
) -> None:
    details = {
        "executionWorkspaceId": wire.WS,
        "requestedAction": "start",
        "requestedOwnerKey": "issue:b",
        "ownerKey": "issue:a",
        "ownerIssueId": "a",
        "ownerRunId": rt.RUN,
        "ownerAgentId": "agent-1",
        "expiresAt": "2026-11-29T12:30:00Z",
        "remediation": "Do not retry; wait for the owner's run to finish.",
    }
    scripted.replies[CONTROL] = ErrorReply(
        code="workspace_runtime_lease_conflict",
        message="Another run controls this workspace's runtime services (issue:a).",
        status=409,
        details=details,
    )
    response = client.post(f"{WS_URL}/runtime-services/start", json={}, headers=board)
    error = _error(response, 409, "workspace_runtime_lease_conflict")
    assert error["details"] == details
    assert "issue:a" in error["error"]


@pytest.mark.parametrize(
    ("code", "status"),
    [("workspace_runtime_port_allocation_exhausted", 409), ("port_conflict", 409)],
)
def test_port_refusals_pass_through(
    client: Client, scripted: Any, board: dict[str, str], code: str, status: int
) -> None:
    scripted.replies[CONTROL] = ErrorReply(
        code=code, message="Port 41007 is held.", status=status, details={"port": 41007}
    )
    response = client.post(f"{WS_URL}/runtime-services/start", headers=board)
    assert _error(response, status, code)["details"] == {"port": 41007}


def test_a_long_start_answers_202_with_its_operation(
    client: Client, scripted: Any, board: dict[str, str]
) -> None:
    scripted.replies[CONTROL] = Accepted(operation_id=wire.OP)
    response = client.post(f"{WS_URL}/runtime-services/start", headers=board)
    assert response.status_code == 202, response.text
    assert response.json() == {"operationId": wire.OP, "status": "running"}
    assert [one.subject for one in scripted.sent] == [*READ, CONTROL]


def test_another_company_workspace_is_404_and_nothing_is_controlled(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies[GET_WS] = ErrorReply(
        code="not_found", message=f"There is no execution workspace {wire.WS}.", status=404
    )
    response = client.post(f"{WS_URL}/runtime-services/start", headers=board)
    _error(response, 404, "not_found")
    assert [one.subject for one in bus.sent] == [GET_WS]
    assert isinstance(bus.sent[0].message, GetExecutionWorkspace)


def test_a_supervisor_that_does_not_answer_is_503_and_a_slow_one_504(
    client: Client, scripted: Any, board: dict[str, str]
) -> None:
    del scripted.replies[CONTROL]  # no responders
    response = client.post(f"{WS_URL}/runtime-services/start", headers=board)
    _error(response, 503, "service_unavailable")
    scripted.replies[CONTROL] = ErrorReply(code="timeout", message="No answer.", status=504)
    _error(client.post(f"{WS_URL}/runtime-services/start", headers=board), 504, "timeout")


def test_a_supervisor_that_answers_no_provisioning_has_the_workspace_read_again(
    client: Client, scripted: Any, company: str, board: dict[str, str]
) -> None:
    # A supervisor older than RuntimeControlResult.runtimeProvisioning.
    scripted.replies[CONTROL] = wire.ok(rt.control_result(company, runtimeProvisioning=None))
    response = client.post(f"{WS_URL}/runtime-services/start", headers=board)
    assert response.status_code == 200, response.text
    assert response.json()["workspace"]["runtimeProvisioning"]["state"] == "provisioned"
    assert STATE in [sent.subject for sent in scripted.sent]


def test_when_the_read_again_fails_the_action_is_still_answered(
    client: Client, scripted: Any, company: str, board: dict[str, str]
) -> None:
    reads = iter([wire.ok(wire.workspace(company, nodeId=NODE))])
    timeout = ErrorReply(code="timeout", message="The realizer did not answer.", status=504)
    scripted.replies[GET_WS] = lambda _: next(reads, timeout)
    response = client.post(f"{WS_URL}/runtime-services/start", headers=board)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["operation"]["id"] == rt.SUP_OP
    assert body["workspace"]["nodeId"] == NODE
    # The services the supervisor answered with the action.
    assert [s["id"] for s in body["workspace"]["runtimeServices"]] == [rt.SERVICE]
    assert "could not be read whole alongside the start" in response.headers["X-Clipyard-Warning"]


def test_when_the_supervisor_is_not_there_to_read_again_its_answer_gives_the_rows(
    client: Client, scripted: Any, company: str, board: dict[str, str]
) -> None:
    # A supervisor older than RuntimeControlResult.runtimeProvisioning acted, then died: the
    # state read after the action finds nobody.
    scripted.replies[CONTROL] = wire.ok(rt.control_result(company, runtimeProvisioning=None))
    gone = ErrorReply(code="service_unavailable", message="runtime-supervisor is gone.", status=503)
    scripted.replies[STATE] = lambda _: gone
    response = client.post(f"{WS_URL}/runtime-services/start", headers=board)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["operation"]["id"] == rt.SUP_OP
    # Not an empty list that reads as "nothing runs": the rows of the action's own answer, and
    # the warning that the workspace could not be read whole.
    assert [s["id"] for s in body["workspace"]["runtimeServices"]] == [rt.SERVICE]
    assert (
        "runtimeServices are those the start answered with"
        in (response.headers["X-Clipyard-Warning"])
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"serviceIndex": -1}, "serviceIndex"),
        ({"serviceIndex": 1.5}, "serviceIndex"),
        ({"workspaceCommandId": ""}, "workspaceCommandId"),
        ({"workspaceCommandId": 7}, "workspaceCommandId"),
        ({"runtimeServiceId": ""}, "runtimeServiceId"),
        ({"serviceName": "web"}, "serviceName"),
        ([], "body"),
    ],
)
def test_a_malformed_body_is_400_naming_the_field_and_sends_nothing(
    client: Client, bus: Any, board: dict[str, str], body: Any, field: str
) -> None:
    for url in (f"{WS_URL}/runtime-services/start", f"{PWS_URL}/runtime-commands/start"):
        response = client.post(url, json=body, headers=board)
        error = _error(response, 400, "validation_failed")
        assert [one["field"] for one in error["details"]["fields"]] == [field]
    assert bus.sent == []


@pytest.mark.parametrize("alias", ["runtime-services", "runtime-commands"])
def test_project_workspace_actions_target_the_project_workspace(
    client: Client, bus: Any, company: str, board: dict[str, str], alias: str
) -> None:
    bus.replies["ws.qry.project_workspace.get"] = wire.ok(wire.project_workspace(company))
    control = "ws.cmd.runtime_service.control.local"  # project workspaces: the gateway's node
    bus.replies[control] = wire.ok(
        rt.control_result(
            company,
            runtimeServices=[rt.service(company, executionWorkspaceId=None, projectWorkspaceId=wire.PWS)],
        )
    )  # fmt: skip
    response = client.post(f"{PWS_URL}/{alias}/Start", json={"serviceIndex": 0}, headers=board)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"workspace", "operation", "runtimeServices"}
    assert body["workspace"]["id"] == wire.PWS
    assert body["runtimeServices"][0]["projectWorkspaceId"] == wire.PWS
    subjects = [one.subject for one in bus.sent]
    assert subjects == ["ws.qry.project_workspace.get", control, "ws.qry.project_workspace.get"]
    read = bus.sent[0].message
    assert isinstance(read, GetProjectWorkspace)
    assert (read.project_id, read.workspace_id) == (wire.PROJECT, wire.PWS)
    command = bus.sent[1].message
    assert isinstance(command, ControlRuntime)
    assert (command.workspace_id, command.project_workspace_id) == (None, wire.PWS)
    assert (command.action, command.service_index) == ("start", 0)
    assert msgspec.to_builtins(command.realizer_facts) == {"projectRuntimeConfig": None}


def test_a_project_workspace_of_another_project_is_404_and_nothing_is_controlled(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.project_workspace.get"] = ErrorReply(
        code="not_found", message="There is no such project workspace.", status=404
    )
    _error(client.post(f"{PWS_URL}/runtime-services/stop", headers=board), 404, "not_found")
    assert [one.subject for one in bus.sent] == ["ws.qry.project_workspace.get"]


def test_rights_board_and_agent_keys_act_the_admin_key_does_not(
    client: Client, scripted: Any, admin: dict[str, str], agent: dict[str, str]
) -> None:
    url = f"{WS_URL}/runtime-services/start"
    _error(client.post(url, headers=admin), 403, "forbidden")
    _error(client.post(url, headers={}), 401, "unauthenticated")
    assert scripted.sent == []
    # An agent key is passed on as the agent: the supervisor checks its run and the lease.
    response = client.post(url, headers={**agent, "X-Run-Id": rt.RUN.upper()})
    assert response.status_code == 200, response.text
    command = _control(scripted.sent)
    assert (command.principal.actor.type, command.principal.actor.id) == ("agent", "agent-7")
    assert command.principal.run_id == rt.RUN
    response = client.post(url, headers={**agent, "X-Paperclip-Run-Id": rt.RUN})
    assert response.status_code == 200, response.text
    last = [sent.message for sent in scripted.sent if sent.subject == CONTROL][-1]
    assert last.principal.run_id == rt.RUN


def test_an_agents_facts_are_read_whole_as_clipyard_itself_for_the_supervisor_only(
    client: Client, scripted: Any, company: str, agent: dict[str, str]
) -> None:
    """An agent reads project workspaces redacted (ARCHITECTURE §5.1); the facts the supervisor
    compares with its whole copies are read as Clipyard itself, or they would never match."""
    response = client.post(
        f"{WS_URL}/runtime-services/restart", headers={**agent, "X-Run-Id": rt.RUN}
    )
    assert response.status_code == 200, response.text
    (read,) = [one.message for one in scripted.sent if one.subject == GET_PWS]
    assert isinstance(read, GetProjectWorkspace)
    assert (read.principal.actor.type, read.principal.company_id) == ("system", company)
    command = _control(scripted.sent)
    assert command.principal.actor.type == "agent"  # the action itself stays the agent's
    facts = msgspec.to_builtins(command.realizer_facts)
    assert facts["projectRuntimeConfig"] == _full(PROJECT_RUNTIME, RuntimeConfig)


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Run-Id": "run-1"},
        {"X-Run-Id": ""},
        {"X-Run-Id": rt.RUN, "X-Paperclip-Run-Id": wire.OP},
    ],
)
def test_a_bad_run_header_is_400_and_sends_nothing(
    client: Client, bus: Any, board: dict[str, str], headers: dict[str, str]
) -> None:
    response = client.post(f"{WS_URL}/runtime-services/start", headers={**board, **headers})
    error = _error(response, 400, "validation_failed")
    assert error["details"]["fields"][0]["source"] == "header"
    assert bus.sent == []


def test_logs_by_lines_and_by_bytes_are_text_plain(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies[LOG] = wire.ok({"text": "Serving HTTP on 127.0.0.1\n", "offset": 900, "length": 26,
                                "size": 926})  # fmt: skip
    url = f"{WS_URL}/runtime-services/{rt.SERVICE}/logs"
    response = client.get(f"{url}?tail=20", headers=board)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == "Serving HTTP on 127.0.0.1\n"
    assert (response.headers["X-Total-Bytes"], response.headers["X-Log-Offset"]) == ("926", "900")
    query = bus.sent[-1].message
    assert isinstance(query, GetRuntimeServiceLog)
    assert (query.workspace_id, query.service_id) == (wire.WS, rt.SERVICE)
    assert (query.tail, query.offset, query.length) == (20, None, None)
    client.get(f"{url}?offset=5&length=100", headers=board)
    assert (bus.sent[-1].message.tail, bus.sent[-1].message.offset) == (None, 5)
    assert bus.sent[-1].message.length == 100
    client.get(f"{url}?offset=5", headers=board)
    assert (bus.sent[-1].message.offset, bus.sent[-1].message.length) == (5, 256 * 1024)
    client.get(f"{url}?length=10", headers=board)
    assert (bus.sent[-1].message.offset, bus.sent[-1].message.length) == (0, 10)
    client.get(url, headers=board)  # neither: the supervisor's default (the last 64 KiB)
    last = bus.sent[-1].message
    assert (last.tail, last.offset, last.length) == (None, None, None)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("tail=0", "tail"),
        ("tail=lots", "tail"),
        ("tail=100001", "tail"),
        ("offset=-1", "offset"),
        ("length=0", "length"),
        ("length=262145", "length"),
        ("tail=5&offset=0", "tail"),
        ("tail=5&length=10", "tail"),
    ],
)
def test_bad_log_parameters_are_400_naming_them_and_send_nothing(
    client: Client, bus: Any, board: dict[str, str], query: str, named: str
) -> None:
    response = client.get(f"{WS_URL}/runtime-services/{rt.SERVICE}/logs?{query}", headers=board)
    error = _error(response, 400, "validation_failed")
    assert [one["field"] for one in error["details"]["fields"]] == [named]
    assert bus.sent == []


def test_an_unknown_service_log_is_404_from_the_supervisor(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies[LOG] = ErrorReply(code="not_found", message="There is no service x.", status=404)
    response = client.get(f"{WS_URL}/runtime-services/x/logs?tail=5", headers=board)
    _error(response, 404, "not_found")


def test_the_openapi_document_has_the_runtime_operations(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    paths = document["paths"]
    operations = {
        op["operationId"]: (path, op)
        for path, item in paths.items()
        for op in item.values()
        if "runtime-" in path and "/tools/" not in path
    }
    assert set(operations) == {
        "controlRuntimeServices",
        "controlRuntimeCommands",
        "controlProjectRuntimeServices",
        "controlProjectRuntimeCommands",
        "getRuntimeServiceLog",
    }
    for name, (path, op) in operations.items():
        assert op["tags"] == ["runtime-services"], name
        assert len(op["description"]) > 100, name
        if name == "getRuntimeServiceLog":
            assert "text/plain" in next(iter(op["responses"]["200"]["content"]))
            assert {"X-Total-Bytes", "X-Log-Offset"} <= set(op["responses"]["200"]["headers"])
            assert {"tail", "offset", "length"} <= {p["name"] for p in op["parameters"]}
            continue
        assert path.endswith("/{action}"), path
        responses = op["responses"]
        assert {"200", "202", "400", "401", "403", "404", "409", "422", "503", "504"} <= set(
            responses
        ), name
        assert "`workspace_runtime_lease_conflict`" in responses["409"]["description"]
        assert "`workspace_runtime_port_allocation_exhausted`" in responses["409"]["description"]
        assert "`unprocessable`" in responses["422"]["description"]
        # X-Paperclip-Run-Id is X-Run-Id's alias (API.md), not a parameter of its own.
        assert "X-Run-Id" in {p["name"] for p in op["parameters"]}
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        (ref,) = [one["$ref"] for one in schema["oneOf"] if "$ref" in one]
        body = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
        assert set(body["properties"]) == {"workspaceCommandId", "runtimeServiceId", "serviceIndex"}
        answer = responses["200"]["content"]["application/json"]["schema"]["$ref"]
        fields = set(document["components"]["schemas"][answer.rsplit("/", 1)[1]]["properties"])
        assert {"workspace", "operation"} <= fields, name
    assert "runtime-services" in [tag["name"] for tag in document["tags"]]
    detail = paths["/api/execution-workspaces/{workspace_id}"]["get"]
    assert "X-Clipyard-Warning" in detail["responses"]["200"]["headers"]
