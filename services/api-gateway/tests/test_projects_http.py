"""Projects and project workspaces over HTTP: each call becomes one realizer request; bad input,
the wrong key kind or another company's path sends nothing."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from api_gateway.controllers.realizer import board_key
from api_gateway.http.security import access, access_guard
from contracts.base import Accepted, Actor, ErrorReply, Principal
from contracts.workspace_commands import (
    CreateProject,
    CreateProjectWorkspace,
    DeleteProject,
    ListProjects,
    UpdateProject,
    UpdateProjectWorkspace,
)
from contracts.workspace_config import ExecutionWorkspacePolicy
from servicekit.access import AccessDeniedError, Action, Resource

_spec = importlib.util.spec_from_file_location(
    "workspace_fixtures", Path(__file__).parent / "workspace_fixtures.py"
)
assert _spec
assert _spec.loader
wire: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wire)

Client = TestClient[Any]


def test_create_project_sends_one_command_with_the_policy(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.cmd.project.create"] = wire.ok(wire.project(company))
    policy = {"defaultMode": "isolated_workspace", "workspaceStrategy": {"type": "git_worktree"}}
    response = client.post(
        f"/api/companies/{company}/projects",
        json={"name": "Web", "executionWorkspacePolicy": policy},
        headers=board,
    )
    assert response.status_code == 201, response.text
    assert response.json()["id"] == wire.PROJECT
    (sent,) = bus.sent
    assert sent.subject == "ws.cmd.project.create"
    assert isinstance(sent.message, CreateProject)
    assert sent.message.company_id == company
    assert sent.message.principal.company_id == company
    assert sent.message.principal.actor.type == "board"
    assert sent.message.execution_workspace_policy.workspace_strategy.type == "git_worktree"
    # On the bus it is the tolerant value, the same bytes.
    decoded = msgspec.json.decode(msgspec.json.encode(sent.message), type=CreateProject)
    assert type(decoded.execution_workspace_policy) is ExecutionWorkspacePolicy


@pytest.mark.parametrize(
    "body",
    [
        {"name": "Web", "executionWorkspacePolicy": {"defaultmode": "isolated_workspace"}},
        {"name": "Web", "executionWorkspacePolicy": {"workspaceStrategy": {"type": "rsync"}}},
        {"name": "Web", "colour": "red"},
        {"executionWorkspacePolicy": {}},
    ],
)
def test_bad_project_bodies_answer_400_and_send_nothing(
    client: Client, bus: Any, company: str, board: dict[str, str], body: dict[str, Any]
) -> None:
    response = client.post(f"/api/companies/{company}/projects", json=body, headers=board)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "validation_failed"
    assert bus.sent == []


def test_another_company_or_the_admin_key_sends_nothing(
    client: Client,
    bus: Any,
    make_company: Callable[..., dict[str, Any]],
    board: dict[str, str],
    admin: dict[str, str],
) -> None:
    other = make_company("Other Inc")["id"]
    response = client.post(f"/api/companies/{other}/projects", json={"name": "x"}, headers=board)
    assert response.status_code == 404
    assert client.get(f"/api/companies/{other}/projects", headers=board).status_code == 404
    response = client.post(f"/api/companies/{other}/projects", json={"name": "x"}, headers=admin)
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert client.get(f"/api/projects/{wire.PROJECT}", headers=admin).status_code == 403
    assert client.get(f"/api/projects/{wire.PROJECT}").status_code == 401
    assert bus.sent == []


def test_list_projects_pages_through_the_realizer(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.project.list"] = wire.page(wire.project(company), total=31)
    response = client.get(f"/api/companies/{company}/projects?limit=10&offset=20", headers=board)
    assert response.status_code == 200
    assert response.headers["X-Total-Count"] == "31"
    assert [row["id"] for row in response.json()] == [wire.PROJECT]
    (sent,) = bus.sent
    assert sent.message == ListProjects(
        principal=sent.message.principal, company_id=company, limit=10, offset=20
    )
    for bad in ("limit=0", "limit=201", "offset=-1", "limit=x"):
        response = client.get(f"/api/companies/{company}/projects?{bad}", headers=board)
        assert response.status_code == 400, bad
    assert len(bus.sent) == 1


def test_update_and_delete_project(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.cmd.project.update"] = wire.ok(wire.project(company, name="Web app"))
    bus.replies["ws.cmd.project.delete"] = ErrorReply(
        code="has_open_dependents", message="The project has 2 open workspaces.", status=409
    )
    response = client.patch(
        f"/api/projects/{wire.PROJECT}", json={"name": "Web app"}, headers=board
    )
    assert response.status_code == 200
    assert response.json()["name"] == "Web app"
    update = bus.sent[0].message
    assert isinstance(update, UpdateProject)
    assert update.name == "Web app"
    assert update.execution_workspace_policy is msgspec.UNSET
    response = client.delete(f"/api/projects/{wire.PROJECT}", headers=board)
    assert response.status_code == 409
    assert response.json() == {
        "error": "The project has 2 open workspaces.",
        "code": "has_open_dependents",
        "details": {},
    }
    assert isinstance(bus.sent[1].message, DeleteProject)
    bus.replies["ws.cmd.project.delete"] = wire.ok({"id": wire.PROJECT})
    assert client.delete(f"/api/projects/{wire.PROJECT}", headers=board).status_code == 204


def test_project_workspace_needs_a_path_or_a_repository(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    url = f"/api/projects/{wire.PROJECT}/workspaces"
    response = client.post(url, json={"name": "main"}, headers=board)
    assert response.status_code == 422
    assert response.json()["code"] == "workspace_path_required"
    response = client.patch(f"{url}/{wire.PWS}", json={"cwd": None, "repoUrl": None}, headers=board)
    assert response.status_code == 422
    bad_runtime = {"services": [{"name": "web", "command": "x", "readiness": {"type": "udp"}}]}
    response = client.post(
        url, json={"name": "main", "cwd": "/srv", "runtimeConfig": bad_runtime}, headers=board
    )
    assert response.status_code == 400
    assert bus.sent == []


def test_project_workspace_clone_is_host_bound_and_may_answer_202(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    url = f"/api/projects/{wire.PROJECT}/workspaces"
    repo = {"name": "main", "repoUrl": "https://github.com/acme/web.git", "repoRef": "main"}
    bus.replies["ws.cmd.project_workspace.create.local"] = Accepted(operation_id=wire.OP)
    response = client.post(url, json=repo, headers=board)
    assert response.status_code == 202
    assert response.json() == {"operationId": wire.OP, "status": "running"}
    created = bus.sent[-1].message
    assert isinstance(created, CreateProjectWorkspace)
    assert (created.project_id, created.repo_url, created.cwd) == (
        wire.PROJECT,
        repo["repoUrl"],
        None,
    )
    bus.replies["ws.cmd.project_workspace.create.local"] = wire.ok(wire.project_workspace(company))
    response = client.post(url, json={"name": "main", "cwd": "/srv/web"}, headers=board)
    assert response.status_code == 201
    assert response.json()["managedCheckout"] == {
        "state": "none",
        "path": None,
        "error": None,
        "operationId": None,
    }


def test_project_workspace_patch_sends_only_what_was_given(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    bus.replies["ws.cmd.project_workspace.update.local"] = wire.ok(wire.project_workspace(company))
    response = client.patch(
        f"/api/projects/{wire.PROJECT}/workspaces/{wire.PWS}",
        json={"setupCommand": None, "runtimeConfig": {"jobs": [{"name": "hi", "command": "echo"}]}},
        headers=board,
    )
    assert response.status_code == 200, response.text
    (sent,) = bus.sent
    assert isinstance(sent.message, UpdateProjectWorkspace)
    wire_message = msgspec.json.decode(msgspec.json.encode(sent.message))
    assert wire_message["setupCommand"] is None
    assert wire_message["runtimeConfig"]["jobs"][0]["name"] == "hi"
    assert not {"name", "cwd", "repoUrl", "isPrimary", "cleanupCommand"} & set(wire_message)


def test_a_realizer_answer_the_gateway_cannot_read_is_502(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    bus.replies["ws.qry.project.get"] = wire.ok({"id": wire.PROJECT})
    response = client.get(f"/api/projects/{wire.PROJECT}", headers=board)
    assert response.status_code == 502
    assert response.json()["code"] == "internal"


def test_no_realizer_is_503_and_a_slow_one_504(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    assert client.get(f"/api/projects/{wire.PROJECT}", headers=board).status_code == 503
    bus.replies["ws.qry.project.get"] = ErrorReply(code="timeout", message="no answer.", status=504)
    assert client.get(f"/api/projects/{wire.PROJECT}", headers=board).status_code == 504


def test_guards_by_key_kind() -> None:
    # Agents may read projects (redacted by the realizer) but not write them; the admin key (no
    # company) may do neither; the board guard (creating and deleting issues) refuses agents.
    def conn(kind: str, company: str | None) -> Any:
        principal = Principal(company_id=company, actor=Actor(type=kind, id="x"))  # type: ignore[arg-type]
        return SimpleNamespace(user=principal, scope={"method": "GET"})

    def route(action: Action) -> Any:
        return SimpleNamespace(opt=access(Resource.PROJECT, action), handler_name="route")

    asyncio.run(access_guard(conn("agent", "c1"), route(Action.READ)))
    asyncio.run(access_guard(conn("board", "c1"), route(Action.READ)))
    asyncio.run(access_guard(conn("board", "c1"), route(Action.WRITE)))
    board_key(conn("board", "c1"), None)  # type: ignore[arg-type]
    for kind, company, action in (
        ("admin", None, Action.READ),
        ("agent", "c1", Action.WRITE),
        ("admin", None, Action.WRITE),
    ):
        with pytest.raises(AccessDeniedError):
            asyncio.run(access_guard(conn(kind, company), route(action)))
    with pytest.raises(AccessDeniedError):
        board_key(conn("agent", "c1"), None)  # type: ignore[arg-type]
