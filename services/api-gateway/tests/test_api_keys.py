"""API keys over HTTP: creation rules, listing without key material, revocation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar.testing import TestClient

from api_gateway.application import GatewayApplication

Client = TestClient[Any]


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_admin_creates_a_board_key_shown_once(
    client: Client, admin: dict[str, str], make_company: Callable[..., dict[str, Any]]
) -> None:
    company = make_company()
    response = client.post(
        f"/api/companies/{company['id']}/api-keys",
        json={"name": "ci", "kind": "board"},
        headers=admin,
    )
    assert response.status_code == 201
    issued = response.json()
    assert set(issued) == {"id", "name", "kind", "agentId", "key", "createdAt"}
    assert issued["key"].startswith("cy_board_")
    # The list shows the key without its material.
    response = client.get(f"/api/companies/{company['id']}/api-keys", headers=admin)
    (row,) = response.json()
    assert response.headers["X-Total-Count"] == "1"
    assert row["id"] == issued["id"]
    assert row["revokedAt"] is None
    assert issued["key"] not in response.text
    assert "hash" not in response.text.lower()


def test_board_key_creates_board_keys_for_its_company(
    client: Client,
    make_company: Callable[..., dict[str, Any]],
    make_board_key: Callable[[str], str],
) -> None:
    company = make_company()
    key = _bearer(make_board_key(company["id"]))
    response = client.post(
        f"/api/companies/{company['id']}/api-keys",
        json={"name": "second", "kind": "board"},
        headers=key,
    )
    assert response.status_code == 201
    # The new key works.
    new_key = _bearer(response.json()["key"])
    assert client.get(f"/api/companies/{company['id']}", headers=new_key).status_code == 200


def test_agent_keys_need_the_controller_and_a_board_key(
    client: Client,
    admin: dict[str, str],
    application: GatewayApplication,
    make_company: Callable[..., dict[str, Any]],
    make_board_key: Callable[[str], str],
) -> None:
    company = make_company()
    key = _bearer(make_board_key(company["id"]))
    before = application.last_notification_id()
    url = f"/api/companies/{company['id']}/api-keys"
    body = {"name": "bot", "kind": "agent", "agentId": "4a1b2c3d-0e9f-4a8b-9c7d-6e5f4a3b2c1d"}
    # No heartbeat controller answers (the fake bus has none): nothing is issued.
    by_board = client.post(url, json=body, headers=key)
    assert by_board.status_code == 503
    assert by_board.json()["code"] == "service_unavailable"
    missing = client.post(url, json={"name": "bot", "kind": "agent"}, headers=key)
    assert missing.status_code == 422
    assert missing.json()["code"] == "key_kind_not_allowed"
    assert missing.json()["details"] == {"field": "agentId"}
    by_admin = client.post(url, json=body, headers=admin)
    assert by_admin.status_code == 403
    assert "board keys only" in by_admin.json()["error"]
    assert application.last_notification_id() == before


def test_board_key_with_an_agent_id_is_422(
    client: Client, admin: dict[str, str], make_company: Callable[..., dict[str, Any]]
) -> None:
    company = make_company()
    response = client.post(
        f"/api/companies/{company['id']}/api-keys",
        json={"name": "ci", "kind": "board", "agentId": "4a1b2c3d-0e9f-4a8b-9c7d-6e5f4a3b2c1d"},
        headers=admin,
    )
    assert response.status_code == 422
    assert response.json()["details"] == {"field": "agentId"}


def test_keys_for_an_unknown_company_are_404(client: Client, admin: dict[str, str]) -> None:
    url = "/api/companies/00000000-0000-0000-0000-000000000000/api-keys"
    assert client.post(url, json={"name": "x", "kind": "board"}, headers=admin).status_code == 404
    assert client.get(url, headers=admin).status_code == 404


def test_delete_revokes_and_answers_204(
    client: Client,
    admin: dict[str, str],
    application: GatewayApplication,
    make_company: Callable[..., dict[str, Any]],
    make_board_key: Callable[[str], str],
) -> None:
    company = make_company()
    make_board_key(company["id"])
    (row,) = client.get(f"/api/companies/{company['id']}/api-keys", headers=admin).json()
    response = client.delete(f"/api/api-keys/{row['id']}", headers=admin)
    assert (response.status_code, response.content) == (204, b"")
    (row,) = client.get(f"/api/companies/{company['id']}/api-keys", headers=admin).json()
    assert row["revokedAt"] is not None
    # Deleting again is harmless and writes nothing.
    before = application.last_notification_id()
    assert client.delete(f"/api/api-keys/{row['id']}", headers=admin).status_code == 204
    assert application.last_notification_id() == before


def test_another_companys_key_cannot_be_deleted(
    client: Client,
    application: GatewayApplication,
    make_company: Callable[..., dict[str, Any]],
    make_board_key: Callable[[str], str],
) -> None:
    acme, globex = make_company("Acme"), make_company("Globex")
    acme_key = _bearer(make_board_key(acme["id"]))
    globex_key = make_board_key(globex["id"])
    (globex_row,) = client.get(
        f"/api/companies/{globex['id']}/api-keys", headers=_bearer(globex_key)
    ).json()
    before = application.last_notification_id()
    response = client.delete(f"/api/api-keys/{globex_row['id']}", headers=acme_key)
    assert response.status_code == 404
    missing = client.delete("/api/api-keys/not-a-key", headers=acme_key)
    assert missing.status_code == 404
    assert application.last_notification_id() == before
    # Globex's key still works.
    assert (
        client.get(f"/api/companies/{globex['id']}", headers=_bearer(globex_key)).status_code == 200
    )
