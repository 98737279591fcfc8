"""Company secrets over HTTP (API.md "Secrets"): each call becomes one git-credentials request;
agent keys, another company's path, bad input and oversized bodies send nothing; no answer ever
holds a value."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication
from api_gateway.domain import ApiKey, hash_secret, new_key
from api_gateway.http.security import access, access_guard
from contracts import credential_subjects as subjects
from contracts.base import Actor, ErrorReply, Principal
from contracts.credentials import (
    CreateSecret,
    DeleteSecret,
    ListSecretAccessEvents,
    ListSecrets,
    RotateSecret,
)
from servicekit.access import AccessDeniedError, Action, Resource

_spec = importlib.util.spec_from_file_location(
    "secret_fixtures", Path(__file__).parent / "secret_fixtures.py"
)
assert _spec
assert _spec.loader
fake: Any = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fake  # its dataclasses look their module up
_spec.loader.exec_module(fake)

Client = TestClient[Any]

VALUE = "ghp_TheValueThatMustNeverComeBack0123456789"
SECRET_FIELDS = {"id", "companyId", "name", "version", "createdAt", "updatedAt"}


@pytest.fixture
def credentials(bus: Any) -> Any:
    """git-credentials answering the secret subjects on the fake bus."""
    return fake.FakeCredentials().install(bus)


@pytest.fixture
def agent(company: str, application: GatewayApplication) -> dict[str, str]:
    """Headers of a real agent key of ``company`` (the HTTP route to make one is not open yet)."""
    key = new_key("agent")
    api_key = ApiKey.issue(
        company_id=company, name="bot", kind="agent", agent_id="agent-1", key_hash=hash_secret(key)
    )
    application.save(api_key)
    return {"Authorization": f"Bearer {key}"}


def _create(client: Client, company: str, headers: dict[str, str], name: str) -> dict[str, Any]:
    response = client.post(
        f"/api/companies/{company}/secrets", json={"name": name, "value": VALUE}, headers=headers
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def test_create_sends_one_command_and_answers_201_without_the_value(
    client: Client, bus: Any, credentials: Any, company: str, board: dict[str, str]
) -> None:
    response = client.post(
        f"/api/companies/{company}/secrets",
        json={"name": "GITHUB_TOKEN", "value": VALUE},
        headers=board,
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == SECRET_FIELDS
    assert (body["companyId"], body["name"], body["version"]) == (company, "GITHUB_TOKEN", 1)
    assert body["createdAt"].endswith("Z")
    assert VALUE not in response.text
    (sent,) = bus.sent
    assert sent.subject == subjects.SECRET_CREATE
    assert isinstance(sent.message, CreateSecret)
    assert (sent.message.company_id, sent.message.name, sent.message.value) == (
        company,
        "GITHUB_TOKEN",
        VALUE,
    )
    assert sent.message.principal.company_id == company
    assert sent.message.principal.actor.type == "board"
    assert credentials.secrets[body["id"]].values == [VALUE]


def test_a_taken_name_is_409_state_conflict(
    client: Client, credentials: Any, company: str, board: dict[str, str]
) -> None:
    _create(client, company, board, "GITHUB_TOKEN")
    response = client.post(
        f"/api/companies/{company}/secrets",
        json={"name": "GITHUB_TOKEN", "value": "another"},
        headers=board,
    )
    assert response.status_code == 409
    assert response.json()["code"] == "state_conflict"
    assert len(credentials.secrets) == 1


def test_rotate_answers_the_next_version_and_delete_answers_204(
    client: Client, bus: Any, credentials: Any, company: str, board: dict[str, str]
) -> None:
    created = _create(client, company, board, "GITLAB_TOKEN")
    url = f"/api/secrets/{created['id']}"
    response = client.put(url, json={"value": "glpat-second"}, headers=board)
    assert response.status_code == 200, response.text
    rotated = response.json()
    assert set(rotated) == SECRET_FIELDS
    assert (rotated["id"], rotated["version"]) == (created["id"], 2)
    assert rotated["updatedAt"] > created["updatedAt"]
    assert "glpat-second" not in response.text
    rotate = bus.sent[-1].message
    assert isinstance(rotate, RotateSecret)
    assert (rotate.secret_id, rotate.value) == (created["id"], "glpat-second")

    response = client.delete(url, headers=board)
    assert response.status_code == 204
    assert response.content == b""
    assert isinstance(bus.sent[-1].message, DeleteSecret)
    assert credentials.secrets == {}
    # Gone: rotating or deleting it again is 404.
    for again in (
        client.put(url, json={"value": "x"}, headers=board),
        client.delete(url, headers=board),
    ):
        assert again.status_code == 404
        assert again.json()["code"] == "not_found"


def test_list_pages_through_git_credentials_without_values(
    client: Client, bus: Any, credentials: Any, company: str, board: dict[str, str]
) -> None:
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN"):
        _create(client, company, board, name)
    bus.sent.clear()
    response = client.get(f"/api/companies/{company}/secrets?limit=2&offset=1", headers=board)
    assert response.status_code == 200
    assert response.headers["X-Total-Count"] == "3"
    assert [row["name"] for row in response.json()] == ["GITHUB_TOKEN", "GITLAB_TOKEN"]
    assert all(set(row) == SECRET_FIELDS for row in response.json())
    assert VALUE not in response.text
    (sent,) = bus.sent
    assert sent.subject == subjects.SECRET_LIST
    assert sent.message == ListSecrets(
        principal=sent.message.principal, company_id=company, limit=2, offset=1
    )
    for bad in ("limit=0", "limit=201", "offset=-1", "limit=x"):
        response = client.get(f"/api/companies/{company}/secrets?{bad}", headers=board)
        assert response.status_code == 400, bad
        assert response.json()["code"] == "validation_failed"
    assert len(bus.sent) == 1


def test_access_events_keep_the_service_order_and_carry_no_value(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    newest = fake.access_event(occurredAt="2026-11-29T12:05:00Z", runId=None, operationId="op-9")
    older = fake.access_event(
        secretName=None, source="server_env", provider="gitlab", remoteHost="gitlab.example:8443"
    )
    bus.replies[subjects.SECRET_ACCESS_EVENTS] = fake.ok({"items": [newest, older], "total": 12})
    response = client.get(
        f"/api/companies/{company}/secret-access-events?limit=2&offset=4", headers=board
    )
    assert response.status_code == 200, response.text
    assert response.headers["X-Total-Count"] == "12"
    rows = response.json()
    assert [row["id"] for row in rows] == [newest["id"], older["id"]]
    assert set(rows[0]) == {
        "id",
        "secretName",
        "source",
        "provider",
        "runId",
        "operationId",
        "remoteHost",
        "occurredAt",
    }
    assert (rows[0]["runId"], rows[0]["operationId"]) == (None, "op-9")
    assert (rows[1]["secretName"], rows[1]["source"], rows[1]["remoteHost"]) == (
        None,
        "server_env",
        "gitlab.example:8443",
    )
    (sent,) = bus.sent
    assert sent.subject == subjects.SECRET_ACCESS_EVENTS
    assert sent.message == ListSecretAccessEvents(
        principal=sent.message.principal, company_id=company, limit=2, offset=4
    )


def test_the_admin_key_manages_any_company_but_not_an_unknown_one(
    client: Client, bus: Any, credentials: Any, company: str, admin: dict[str, str]
) -> None:
    created = _create(client, company, admin, "GITHUB_TOKEN")
    assert bus.sent[-1].message.principal.actor.type == "admin"
    listed = client.get(f"/api/companies/{company}/secrets", headers=admin)
    assert [row["id"] for row in listed.json()] == [created["id"]]
    rotated = client.put(f"/api/secrets/{created['id']}", json={"value": "v2"}, headers=admin)
    assert rotated.json()["version"] == 2
    assert client.delete(f"/api/secrets/{created['id']}", headers=admin).status_code == 204
    sent = len(bus.sent)
    unknown = "00000000-0000-0000-0000-000000000000"
    for response in (
        client.post(
            f"/api/companies/{unknown}/secrets",
            json={"name": "GH_TOKEN", "value": "v"},
            headers=admin,
        ),
        client.get(f"/api/companies/{unknown}/secrets", headers=admin),
        client.get(f"/api/companies/{unknown}/secret-access-events", headers=admin),
    ):
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"
    assert len(bus.sent) == sent


def test_another_company_is_404(
    client: Client,
    bus: Any,
    credentials: Any,
    company: str,
    board: dict[str, str],
    make_company: Callable[..., dict[str, Any]],
    make_board_key: Callable[[str], str],
) -> None:
    other = make_company("Other Inc")["id"]
    other_board = {"Authorization": f"Bearer {make_board_key(other)}"}
    theirs = _create(client, other, other_board, "GITHUB_TOKEN")
    bus.sent.clear()
    # Their company's paths: 404 at the gateway, nothing sent.
    for response in (
        client.post(
            f"/api/companies/{other}/secrets",
            json={"name": "GH_TOKEN", "value": "v"},
            headers=board,
        ),
        client.get(f"/api/companies/{other}/secrets", headers=board),
        client.get(f"/api/companies/{other}/secret-access-events", headers=board),
    ):
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"
    assert bus.sent == []
    # Their secret by id: git-credentials answers 404 for our principal.
    url = f"/api/secrets/{theirs['id']}"
    assert client.put(url, json={"value": "mine now"}, headers=board).status_code == 404
    assert client.delete(url, headers=board).status_code == 404
    assert {sent.message.principal.company_id for sent in bus.sent} == {company}
    assert credentials.secrets[theirs["id"]].values == [VALUE]


def test_agent_keys_and_run_tokens_are_403_and_send_nothing(
    client: Client, bus: Any, company: str, agent: dict[str, str]
) -> None:
    for method, url, body in (
        ("POST", f"/api/companies/{company}/secrets", {"name": "GITHUB_TOKEN", "value": VALUE}),
        ("GET", f"/api/companies/{company}/secrets", None),
        ("PUT", "/api/secrets/s-1", {"value": VALUE}),
        ("DELETE", "/api/secrets/s-1", None),
        ("GET", f"/api/companies/{company}/secret-access-events", None),
    ):
        response = client.request(method, url, json=body, headers=agent)
        assert response.status_code == 403, (method, url, response.text)
        assert response.json()["code"] == "forbidden"
        unauthenticated = client.request(method, url, json=body)
        assert unauthenticated.status_code == 401
    assert bus.sent == []
    # A run token is an agent principal bound to its run: refused by the same guard.
    run = Principal(
        company_id=company,
        actor=Actor(type="agent", id="agent-1"),
        run_id="run-1",
        issue_id="issue-1",
        run_bound=True,
    )
    for action in (Action.READ, Action.WRITE):
        route = SimpleNamespace(opt=access(Resource.SECRET, action), handler_name="route")
        with pytest.raises(AccessDeniedError, match="a board key"):
            asyncio.run(access_guard(SimpleNamespace(user=run, scope={"method": "GET"}), route))  # type: ignore[arg-type]


def test_without_git_credentials_503_slow_504_unreadable_502(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    url = f"/api/companies/{company}/secrets"
    response = client.get(url, headers=board)
    assert (response.status_code, response.json()["code"]) == (503, "service_unavailable")
    bus.replies[subjects.SECRET_LIST] = ErrorReply(code="timeout", message="no answer.", status=504)
    assert client.get(url, headers=board).status_code == 504
    bus.replies[subjects.SECRET_CREATE] = fake.ok({"id": "s-1", "name": "GITHUB_TOKEN"})
    response = client.post(url, json={"name": "GITHUB_TOKEN", "value": VALUE}, headers=board)
    assert (response.status_code, response.json()["code"]) == (502, "internal")
    assert subjects.SECRET_CREATE in response.json()["error"]
    assert VALUE not in response.text
