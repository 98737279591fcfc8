"""Authentication and company scoping: who may see what, and what a refusal says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication

Client = TestClient[Any]


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _unauthenticated(response: Any) -> str:
    assert response.status_code == 401, response.text
    assert response.json()["code"] == "unauthenticated"
    assert response.headers["WWW-Authenticate"] == "Bearer"
    message: str = response.json()["error"]
    return message


def test_missing_key_is_401_saying_how_to_authenticate(
    client: Client, application: GatewayApplication
) -> None:
    message = _unauthenticated(client.post("/api/companies", json={"name": "Acme"}))
    assert "Authorization: Bearer <key>" in message
    assert application.last_notification_id() == 0


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer   ", "token"])
def test_malformed_authorization_is_401(client: Client, header: str) -> None:
    message = _unauthenticated(client.get("/api/companies", headers={"Authorization": header}))
    assert "Bearer <key>" in message


def test_unknown_key_is_401(client: Client, application: GatewayApplication) -> None:
    response = client.post(
        "/api/companies", json={"name": "Acme"}, headers=_bearer("cy_board_made_up")
    )
    assert "not known" in _unauthenticated(response)
    assert application.last_notification_id() == 0


def test_revoked_key_stops_working_at_once(
    client: Client,
    admin: dict[str, str],
    make_company: Callable[..., dict[str, Any]],
    make_board_key: Callable[[str], str],
) -> None:
    company = make_company()
    key = make_board_key(company["id"])
    assert client.get(f"/api/companies/{company['id']}", headers=_bearer(key)).status_code == 200
    (row,) = client.get(f"/api/companies/{company['id']}/api-keys", headers=admin).json()
    assert client.delete(f"/api/api-keys/{row['id']}", headers=admin).status_code == 204
    # The very next request with that key is refused, naming the revocation.
    response = client.get(f"/api/companies/{company['id']}", headers=_bearer(key))
    assert "revoked" in _unauthenticated(response)


def test_board_key_sees_its_company_only(
    client: Client,
    make_company: Callable[..., dict[str, Any]],
    make_board_key: Callable[[str], str],
) -> None:
    acme, globex = make_company("Acme"), make_company("Globex")
    key = _bearer(make_board_key(acme["id"]))
    assert client.get(f"/api/companies/{acme['id']}", headers=key).json()["name"] == "Acme"
    # Another company answers exactly like a company that does not exist.
    other = client.get(f"/api/companies/{globex['id']}", headers=key)
    missing = client.get("/api/companies/00000000-0000-0000-0000-000000000000", headers=key)
    assert other.status_code == missing.status_code == 404
    assert other.json()["code"] == missing.json()["code"] == "not_found"
    assert client.get(f"/api/companies/{globex['id']}/api-keys", headers=key).status_code == 404


def test_admin_routes_refuse_board_keys_with_403(
    client: Client,
    application: GatewayApplication,
    make_company: Callable[..., dict[str, Any]],
    make_board_key: Callable[[str], str],
) -> None:
    key = _bearer(make_board_key(make_company()["id"]))
    before = application.last_notification_id()
    for response in (
        client.get("/api/companies", headers=key),
        client.post("/api/companies", json={"name": "Mine"}, headers=key),
    ):
        assert response.status_code == 403
        assert response.json()["code"] == "forbidden"
        assert "admin key" in response.json()["error"]
    assert application.last_notification_id() == before


def test_admin_key_is_compared_by_hash(client: Client, admin: dict[str, str]) -> None:
    assert client.get("/api/companies", headers=admin).status_code == 200
    almost = admin["Authorization"][:-1] + "X"
    _unauthenticated(client.get("/api/companies", headers={"Authorization": almost}))


def test_without_an_admin_key_setting_nothing_is_admin(
    application: GatewayApplication, bus: Any, settings: Any
) -> None:
    from dataclasses import replace

    from api_gateway.app import create_app

    no_admin = replace(settings, admin_key_hash=None)
    with TestClient(create_app(application=application, bus=bus, settings=no_admin)) as client:
        _unauthenticated(client.get("/api/companies", headers=_bearer("")))
        _unauthenticated(client.get("/api/companies", headers=_bearer("anything")))
