"""Operator-page sessions: a board key for an HttpOnly SameSite=Strict cookie, CSRF on changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication

Client = TestClient[Any]


@pytest.fixture
def company(make_company: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    return make_company("Acme")


@pytest.fixture
def board_key(company: dict[str, Any], make_board_key: Callable[[str], str]) -> str:
    return make_board_key(company["id"])


def _sign_in(client: Client, key: str) -> dict[str, Any]:
    response = client.post("/api/session", json={"key": key})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_sign_in_sets_a_strict_http_only_cookie(
    client: Client, company: dict[str, Any], board_key: str
) -> None:
    response = client.post("/api/session", json={"key": board_key})
    assert response.status_code == 200
    assert set(response.json()) == {"csrfToken", "companyId"}
    assert response.json()["companyId"] == company["id"]
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("clipyard_session=")
    attributes = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "samesite=strict", "path=/"} <= attributes
    # The session id is not the CSRF token, and neither is the key.
    session_id = client.cookies["clipyard_session"]
    assert session_id not in (response.json()["csrfToken"], board_key)


def test_the_cookie_authenticates_reads_without_csrf(
    client: Client, company: dict[str, Any], board_key: str
) -> None:
    _sign_in(client, board_key)
    response = client.get(f"/api/companies/{company['id']}")
    assert response.status_code == 200
    assert client.get("/api/companies").status_code == 403  # a board session is not admin


def test_cookie_changes_need_the_csrf_header(
    client: Client, company: dict[str, Any], board_key: str, application: GatewayApplication
) -> None:
    csrf = _sign_in(client, board_key)["csrfToken"]
    url = f"/api/companies/{company['id']}/api-keys"
    body = {"name": "from-the-page", "kind": "board"}
    before = application.last_notification_id()
    for headers in ({}, {"X-CSRF-Token": "wrong"}):
        response = client.post(url, json=body, headers=headers)
        assert response.status_code == 403
        assert response.json()["code"] == "forbidden"
        assert "X-CSRF-Token" in response.json()["error"]
    assert application.last_notification_id() == before
    assert client.post(url, json=body, headers={"X-CSRF-Token": csrf}).status_code == 201


def test_sign_in_refusals(
    client: Client, admin: dict[str, str], application: GatewayApplication
) -> None:
    unknown = client.post("/api/session", json={"key": "cy_board_nope"})
    assert (unknown.status_code, unknown.json()["code"]) == (401, "unauthenticated")
    as_admin = client.post("/api/session", json={"key": admin["Authorization"][7:]})
    assert (as_admin.status_code, as_admin.json()["code"]) == (422, "key_kind_not_allowed")
    malformed = client.post("/api/session", json={"key": "x", "remember": True})
    assert (malformed.status_code, malformed.json()["code"]) == (400, "validation_failed")
    assert "set-cookie" not in unknown.headers
    assert application.last_notification_id() == 0


def test_sign_out_needs_csrf_then_ends_the_session(
    client: Client, company: dict[str, Any], board_key: str
) -> None:
    csrf = _sign_in(client, board_key)["csrfToken"]
    session_id = client.cookies["clipyard_session"]
    assert client.delete("/api/session").status_code == 403
    response = client.delete("/api/session", headers={"X-CSRF-Token": csrf})
    assert response.status_code == 204
    assert 'clipyard_session=""' in response.headers["set-cookie"]
    assert "max-age=0" in response.headers["set-cookie"].lower()
    # The old cookie no longer works, even if a client kept it.
    client.cookies.set("clipyard_session", session_id)
    response = client.get(f"/api/companies/{company['id']}")
    assert (response.status_code, response.json()["code"]) == (401, "unauthenticated")
    assert "sign in again" in response.json()["error"]


def test_sign_out_without_a_session_only_clears_the_cookie(client: Client) -> None:
    assert client.delete("/api/session").status_code == 204
    client.cookies.set("clipyard_session", "made-up")
    assert client.delete("/api/session").status_code == 204


def test_a_bearer_key_wins_over_the_cookie(
    client: Client, company: dict[str, Any], board_key: str
) -> None:
    _sign_in(client, board_key)
    # A bad key in the header is refused; the session cookie does not rescue it.
    response = client.get(
        f"/api/companies/{company['id']}", headers={"Authorization": "Bearer cy_board_nope"}
    )
    assert response.status_code == 401


def test_revoking_the_key_ends_its_sessions(
    client: Client, admin: dict[str, str], company: dict[str, Any], board_key: str
) -> None:
    _sign_in(client, board_key)
    (row,) = client.get(f"/api/companies/{company['id']}/api-keys", headers=admin).json()
    client.delete(f"/api/api-keys/{row['id']}", headers=admin)
    response = client.get(f"/api/companies/{company['id']}")
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]
