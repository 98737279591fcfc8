"""The access guard (ARCHITECTURE §5.1): every authenticated ``/api`` operation declares its
resource and action, the OpenAPI document lists ``forbidden`` wherever the policy may refuse, and
the one app guard refuses or lets through each actor kind as ``POLICY`` says, before anything is
sent on the bus. Errors of the access model (``CodedError``) answer their own status."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar, get
from litestar.handlers import HTTPRouteHandler
from litestar.routes import HTTPRoute
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication
from api_gateway.http.errors import problem_of
from api_gateway.http.security import ACCESS_OPT, PUBLIC_OPT
from contracts import heartbeat_subjects as hb
from contracts import workspace_subjects as ws
from servicekit.access import (
    POLICY,
    Access,
    AccessDeniedError,
    Action,
    ActorKind,
    NotVisibleError,
    Resource,
    reach_of,
)

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
R, A = Resource, Action

ROUTE_TABLE: dict[str, tuple[Resource, Action]] = {
    "createCompany": (R.COMPANY, A.WRITE),
    "setCompanyHostAccess": (R.COMPANY, A.WRITE),
    "listCompanies": (R.COMPANY, A.READ),
    "getCompany": (R.COMPANY, A.READ),
    "listApiKeys": (R.API_KEY, A.READ),
    "createApiKey": (R.API_KEY, A.WRITE),
    "deleteApiKey": (R.API_KEY, A.WRITE),
    "getOperation": (R.OPERATION, A.READ),
    "streamCompanyEvents": (R.EVENT_STREAM, A.READ),
    "listProjects": (R.PROJECT, A.READ),
    "getProject": (R.PROJECT, A.READ),
    "createProject": (R.PROJECT, A.WRITE),
    "updateProject": (R.PROJECT, A.WRITE),
    "deleteProject": (R.PROJECT, A.WRITE),
    "listProjectWorkspaces": (R.PROJECT_WORKSPACE, A.READ),
    "getProjectWorkspace": (R.PROJECT_WORKSPACE, A.READ),
    "createProjectWorkspace": (R.PROJECT_WORKSPACE, A.WRITE),
    "updateProjectWorkspace": (R.PROJECT_WORKSPACE, A.WRITE),
    "deleteProjectWorkspace": (R.PROJECT_WORKSPACE, A.WRITE),
    "listIssues": (R.ISSUE, A.READ),
    "getIssue": (R.ISSUE, A.READ),
    "listWorkProducts": (R.ISSUE, A.READ),
    "getHeartbeatContext": (R.ISSUE, A.READ),
    "createIssue": (R.ISSUE, A.WRITE),
    "updateIssue": (R.ISSUE, A.WRITE),
    "deleteIssue": (R.ISSUE, A.WRITE),
    "createWorkProduct": (R.ISSUE, A.WRITE),
    "realizeIssueWorkspace": (R.ISSUE, A.CONTROL),
    "getExecutionWorkspace": (R.EXECUTION_WORKSPACE, A.READ),
    "listExecutionWorkspaces": (R.EXECUTION_WORKSPACE, A.READ),
    "getCloseReadiness": (R.EXECUTION_WORKSPACE, A.READ),
    "getWorkspaceDiff": (R.EXECUTION_WORKSPACE, A.READ),
    "getWorkspaceHistory": (R.EXECUTION_WORKSPACE, A.READ),
    "getWorkspaceOperation": (R.EXECUTION_WORKSPACE, A.READ),
    "getWorkspaceOperationOutput": (R.EXECUTION_WORKSPACE, A.READ),
    "listWorkspaceEvents": (R.EXECUTION_WORKSPACE, A.READ),
    "listWorkspaceOperations": (R.EXECUTION_WORKSPACE, A.READ),
    "updateExecutionWorkspace": (R.EXECUTION_WORKSPACE, A.WRITE),
    "reconcileBranch": (R.EXECUTION_WORKSPACE, A.WRITE),
    "controlRuntimeServices": (R.RUNTIME_SERVICE, A.CONTROL),
    "controlRuntimeCommands": (R.RUNTIME_SERVICE, A.CONTROL),
    "controlProjectRuntimeServices": (R.RUNTIME_SERVICE, A.CONTROL),
    "controlProjectRuntimeCommands": (R.RUNTIME_SERVICE, A.CONTROL),
    "getRuntimeServiceLog": (R.RUNTIME_SERVICE, A.READ),
    "listSecrets": (R.SECRET, A.READ),
    "listSecretAccessEvents": (R.SECRET, A.READ),
    "createSecret": (R.SECRET, A.WRITE),
    "rotateSecret": (R.SECRET, A.WRITE),
    "deleteSecret": (R.SECRET, A.WRITE),
    "listAgents": (R.AGENT, A.READ),
    "getAgent": (R.AGENT, A.READ),
    "createAgent": (R.AGENT, A.WRITE),
    "updateAgent": (R.AGENT, A.WRITE),
    "deleteAgent": (R.AGENT, A.WRITE),
    "wakeAgent": (R.AGENT, A.CONTROL),
    "wakeAgentAlias": (R.AGENT, A.CONTROL),
    "getRun": (R.RUN, A.READ),
    "getRunLog": (R.RUN, A.READ),
    "listRuns": (R.RUN, A.READ),
    "cancelRun": (R.RUN, A.CONTROL),
    "getRuntimeHealth": (R.ADAPTER_SLOTS, A.READ),
    "listNodes": (R.NODE, A.READ),
    "drainNode": (R.NODE, A.CONTROL),
    "undrainNode": (R.NODE, A.CONTROL),
}
"""The route table of ARCHITECTURE §5.1 (by operation id): what each route acts on."""

PUBLIC_OPERATIONS = {"getHealth", "signIn", "signOut"}
PEOPLE = [kind for kind in ActorKind if kind is not ActorKind.SYSTEM]
"""The actor kinds a credential can be (``system`` is Clipyard itself, never an HTTP caller)."""


def _api_handlers(app: Litestar) -> Iterator[tuple[str, HTTPRouteHandler]]:
    """Every ``/api`` route handler but Litestar's own ``OPTIONS`` answers."""
    for route in app.routes:
        if not isinstance(route, HTTPRoute) or not route.path.startswith("/api"):
            continue
        for handler in route.route_handlers:
            if handler.http_methods != {"OPTIONS"}:
                yield route.path, handler


# -- declarations ------------------------------------------------------------------------------


def test_every_authenticated_api_operation_declares_its_access(client: Client) -> None:
    declared: dict[str, tuple[Resource, Action]] = {}
    undeclared: list[str] = []
    public: set[str | None] = set()
    for path, handler in _api_handlers(client.app):
        if handler.opt.get(PUBLIC_OPT):
            public.add(handler.operation_id)  # type: ignore[arg-type]
            continue
        access = handler.opt.get(ACCESS_OPT)
        if access is None:
            undeclared.append(f"{sorted(handler.http_methods)} {path} ({handler.operation_id})")
            continue
        resource, action = access
        assert isinstance(resource, Resource), path
        assert isinstance(action, Action), path
        declared[str(handler.operation_id)] = (resource, action)
    assert undeclared == [], "routes without opt=access(Resource..., Action...)"
    assert public <= PUBLIC_OPERATIONS | {None}, "only health, sign-in/out and the docs are public"
    assert declared == ROUTE_TABLE


def test_a_route_without_a_declaration_is_never_served(
    client: Client, admin: dict[str, str]
) -> None:
    served: list[str] = []

    @get("/api/test-only/undeclared", sync_to_thread=False)
    def undeclared() -> str:
        """A route someone forgot to declare."""
        served.append("yes")
        return "served"

    client.app.register(undeclared)
    response = client.get("/api/test-only/undeclared", headers={"Authorization": "Bearer x"})
    assert response.status_code == 401  # authentication first
    as_admin = client.get("/api/test-only/undeclared", headers=admin)
    assert (as_admin.status_code, as_admin.json()["code"]) == (500, "internal")
    assert served == []


def test_every_route_the_policy_may_refuse_documents_forbidden(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    operations = {
        op["operationId"]: op for item in document["paths"].values() for op in item.values()
    }
    for operation_id, (resource, action) in ROUTE_TABLE.items():
        if all(reach_of(kind, resource, action) for kind in PEOPLE):
            continue  # every kind reaches it (getCompany, getOperation): the guard never refuses
        refusal = operations[operation_id]["responses"].get("403")
        assert refusal is not None, f"{operation_id} may answer 403 but does not list it"
        assert "`forbidden`" in refusal["description"], operation_id


# -- the guard, per actor kind -----------------------------------------------------------------


@dataclass
class Actors:
    """A credential of each actor kind in one company (the board session signed in on the
    client: it sends the cookie, and its CSRF token on changes)."""

    company: str
    headers: dict[ActorKind, dict[str, str]] = field(default_factory=dict)

    def of(self, kind: ActorKind, method: str) -> dict[str, str]:
        headers = dict(self.headers[kind])
        if kind is not ActorKind.BOARD_SESSION or method in ("GET", "HEAD"):
            headers.pop("X-CSRF-Token", None)
        return headers


@pytest.fixture
def actors(
    client: Client,
    bus: Any,
    application: GatewayApplication,
    company: str,
    board: dict[str, str],
    admin: dict[str, str],
    make_board_key: Any,
) -> Actors:
    bus.replies[hb.AGENT_GET] = wire.ok(fx.agent(company))
    created = client.post(
        f"/api/companies/{company}/api-keys",
        json={"name": "coder", "kind": "agent", "agentId": fx.AGENT},
        headers=board,
    )
    assert created.status_code == 201, created.text
    del bus.replies[hb.AGENT_GET]  # every service is silent from here on: 503 past the guard
    token = asyncio.run(fx.mint(application, company)).token
    signed_in = client.post("/api/session", json={"key": make_board_key(company, "page")})
    assert signed_in.status_code == 200, signed_in.text
    bus.sent.clear()
    return Actors(
        company=company,
        headers={
            ActorKind.ADMIN: admin,
            ActorKind.BOARD_KEY: board,
            ActorKind.BOARD_SESSION: {"X-CSRF-Token": signed_in.json()["csrfToken"]},
            ActorKind.AGENT_KEY: {"Authorization": f"Bearer {created.json()['key']}"},
            ActorKind.RUN_TOKEN: {"Authorization": f"Bearer {token}"},
        },
    )


PROBES: list[tuple[str, str, dict[str, Any] | None, Resource, Action]] = [
    ("GET", "/api/companies/{company}", None, R.COMPANY, A.READ),
    ("POST", "/api/companies", {"name": "Another Co"}, R.COMPANY, A.WRITE),
    ("GET", "/api/companies/{company}/api-keys", None, R.API_KEY, A.READ),
    ("GET", "/api/companies/{company}/secrets", None, R.SECRET, A.READ),
    ("GET", "/api/operations/" + wire.OP, None, R.OPERATION, A.READ),
    ("GET", "/api/companies/{company}/events/stream", None, R.EVENT_STREAM, A.READ),
    ("GET", "/api/projects/" + wire.PROJECT, None, R.PROJECT, A.READ),
    ("POST", "/api/companies/{company}/projects", {"name": "web"}, R.PROJECT, A.WRITE),
    ("GET", "/api/issues/" + wire.ISSUE, None, R.ISSUE, A.READ),
    ("PATCH", "/api/execution-workspaces/" + wire.WS, {}, R.EXECUTION_WORKSPACE, A.WRITE),
    ("POST", f"/api/agents/{fx.AGENT}/wakeup", {}, R.AGENT, A.CONTROL),
    ("GET", "/api/companies/{company}/tools/runtime-health", None, R.ADAPTER_SLOTS, A.READ),
]


@pytest.mark.parametrize("kind", PEOPLE, ids=[kind.value for kind in PEOPLE])
def test_the_guard_refuses_and_permits_as_the_policy_says(
    client: Client, bus: Any, actors: Actors, kind: ActorKind
) -> None:
    for method, template, body, resource, action in PROBES:
        url = template.format(company=actors.company)
        sent = len(bus.sent)
        response = client.request(method, url, json=body, headers=actors.of(kind, method))
        where = (kind.value, method, url, response.text[:300])
        if (kind, resource, action) in POLICY:
            assert response.status_code != 403, where
            continue
        assert response.status_code == 403, where
        answer = response.json()
        assert answer["code"] == "forbidden", where
        assert answer["details"] == {
            "actorKind": kind.value,
            "resource": resource.value,
            "action": action.value,
        }
        with pytest.raises(AccessDeniedError) as refused:
            Access(kind=kind, company_id=actors.company, actor_id="x").reach(resource, action)
        assert answer["error"].startswith(str(refused.value)), where
        assert len(bus.sent) == sent, f"refused, yet sent on the bus: {where}"


def test_the_admin_is_told_what_its_key_is_for(client: Client, actors: Actors) -> None:
    response = client.get(f"/api/issues/{wire.ISSUE}", headers=actors.of(ActorKind.ADMIN, "GET"))
    assert response.status_code == 403
    assert "use a board key of the company" in response.json()["error"]


@pytest.mark.parametrize("kind", [ActorKind.AGENT_KEY, ActorKind.RUN_TOKEN])
def test_agents_are_refused_the_company_stream_and_told_what_to_read(
    client: Client, bus: Any, actors: Actors, kind: ActorKind
) -> None:
    url = f"/api/companies/{actors.company}/events/stream"
    response = client.get(url, headers={**actors.of(kind, "GET"), "Last-Event-ID": "0"})
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["code"] == "forbidden"
    message = body["error"]
    assert "every issue" in message
    for instead in (
        "GET /api/runs/{runId}",
        "/api/runs/{runId}/log",
        "/api/issues/{issueId}/heartbeat-context",
        "/api/execution-workspaces/{id}/events",
    ):
        assert instead in message, instead
    assert bus.stream_starts == [], "the stream was never opened"


def test_options_answers_without_a_key(client: Client) -> None:
    response = client.options(f"/api/issues/{wire.ISSUE}")
    assert response.status_code == 204, response.text
    assert "OPTIONS" in response.headers["allow"]


# -- the session principal ---------------------------------------------------------------------


def test_the_operator_page_and_the_cookie_act_as_a_board_session(
    client: Client, bus: Any, company: str, make_board_key: Any
) -> None:
    assert client.post("/sign-in", json={"key": make_board_key(company)}).status_code == 200
    for subject in (ws.ISSUE_LIST, ws.WORKSPACE_LIST, hb.AGENT_LIST, ws.WORKSPACE_LIST_SUMMARIES):
        bus.replies[subject] = wire.page()
    assert client.get("/issues").status_code == 200  # a page
    assert client.get(f"/api/companies/{company}/projects").status_code == 503  # the API
    principals = {sent.message.principal for sent in bus.sent}
    assert principals, "the page and the API asked the services"
    assert all(p.via_session and p.actor.type == "board" for p in principals)
    assert {Access.of(p).kind for p in principals} == {ActorKind.BOARD_SESSION}


# -- the model's errors ------------------------------------------------------------------------


def test_the_access_model_s_errors_answer_their_status_code_and_details() -> None:
    hidden = problem_of(NotVisibleError("There is no issue i-1.", issueId="i-1"))
    assert (hidden.status, hidden.code, hidden.message, hidden.details) == (
        404,
        "not_found",
        "There is no issue i-1.",
        {"issueId": "i-1"},
    )
    refused = problem_of(AccessDeniedError("An agent can only wake itself.", agentId="a-2"))
    assert (refused.status, refused.code, refused.details) == (403, "forbidden", {"agentId": "a-2"})
