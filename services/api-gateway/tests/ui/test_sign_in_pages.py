"""Signing in and out of the operator page; pages without a session redirect to /sign-in; the API
keeps its own answers."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication

_spec = importlib.util.spec_from_file_location("pages", Path(__file__).parent / "pages.py")
assert _spec
assert _spec.loader
pages: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pages)

Client = TestClient[Any]
PAGES = ("/", "/workspaces", "/issues", "/runs", "/workspaces/" + pages.wire.WS)


@pytest.fixture
def board_key(company: str, make_board_key: Callable[[str], str]) -> str:
    return make_board_key(company)


@pytest.mark.parametrize("path", PAGES)
def test_pages_without_a_session_redirect_to_sign_in(client: Client, path: str) -> None:
    response = client.get(path, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/sign-in")
    client.cookies.set("clipyard_session", "not-a-session")
    response = client.get(path, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/sign-in")


def test_the_api_still_answers_401_json_without_a_key(client: Client, company: str) -> None:
    response = client.get(f"/api/companies/{company}/execution-workspaces")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    missing = client.get("/api/no-such-thing")
    assert missing.status_code in (401, 404)
    assert missing.headers["content-type"].startswith("application/json")


def test_sign_in_sets_the_session_cookie_and_never_echoes_the_key(
    client: Client, board_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    response = client.post("/sign-in", json={"key": board_key})
    assert response.status_code == 200
    assert response.json() == {"next": "/workspaces"}
    cookie = response.headers["set-cookie"]
    attributes = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "samesite=strict", "path=/"} <= attributes
    assert cookie.startswith("clipyard_session=")
    assert board_key not in cookie
    assert board_key not in response.text
    home = client.get("/", follow_redirects=False)
    assert (home.status_code, home.headers["location"]) == (303, "/workspaces")
    again = client.get("/sign-in", follow_redirects=False)
    assert (again.status_code, again.headers["location"]) == (303, "/workspaces")
    assert board_key not in caplog.text


def test_sign_in_without_javascript_posts_the_form(client: Client, board_key: str) -> None:
    response = client.post("/sign-in", data={"key": board_key}, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/workspaces")
    assert "clipyard_session=" in response.headers["set-cookie"]
    assert board_key not in response.text


def test_the_sign_in_form_posts_the_key_in_the_body(client: Client) -> None:
    page = client.get("/sign-in")
    assert page.status_code == 200
    html = page.text
    assert '<form method="post" action="/sign-in"' in html
    assert '<label for="board-key">Board key</label>' in html
    assert 'id="board-key" name="key" type="password"' in html
    assert '<button type="submit">Sign in</button>' in html
    assert "/static/sign-in.js" in html
    assert 'name="csrf-token"' not in html  # no session yet


def test_a_wrong_key_shows_the_apis_message(client: Client) -> None:
    api = client.post("/api/session", json={"key": "cy_board_wrong"})
    assert api.status_code == 401
    message = api.json()["error"]
    scripted = client.post("/sign-in", json={"key": "cy_board_wrong"})
    assert scripted.status_code == 401
    body = scripted.json()
    assert (body["error"], body["code"]) == (message, "unauthenticated")
    assert body["details"]["fields"][0]["field"] == "key"
    assert "set-cookie" not in scripted.headers
    form = client.post("/sign-in", data={"key": "cy_board_wrong"})
    assert form.status_code == 401
    assert 'role="alert"' in form.text
    assert message.replace("'", "&#39;") in form.text
    assert "cy_board_wrong" not in form.text
    assert 'aria-describedby="board-key-error"' in form.text


def test_the_admin_key_and_an_empty_key_are_refused(client: Client, admin: dict[str, str]) -> None:
    as_admin = client.post("/sign-in", json={"key": admin["Authorization"][7:]})
    assert (as_admin.status_code, as_admin.json()["code"]) == (422, "key_kind_not_allowed")
    empty = client.post("/sign-in", json={"key": "  "})
    assert (empty.status_code, empty.json()["code"]) == (400, "validation_failed")
    assert empty.json()["details"]["fields"][0]["field"] == "key"
    no_body = client.post("/sign-in", content=b"not json")
    assert no_body.status_code == 400


def test_a_sign_in_posted_from_another_site_is_refused(client: Client, board_key: str) -> None:
    for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        response = client.post("/sign-in", json={"key": board_key}, headers=headers)
        assert response.status_code == 403
        assert "set-cookie" not in response.headers


def test_the_csrf_token_of_the_page_authorizes_api_changes(
    client: Client, company: str, board_key: str, bus: Any
) -> None:
    csrf = pages.sign_in(client, board_key, bus)
    for path in ("/workspaces", "/issues", "/runs"):
        page = client.get(path)
        assert page.status_code == 200
        assert f'<meta name="csrf-token" content="{csrf}">' in page.text
        assert board_key not in page.text
        assert board_key not in str(page.headers)
    url = f"/api/companies/{company}/api-keys"
    body = {"name": "from-the-page", "kind": "board"}
    assert client.post(url, json=body).status_code == 403  # the cookie alone is refused
    assert client.post(url, json=body, headers={"X-CSRF-Token": csrf}).status_code == 201
    assert client.get(f"/api/companies/{company}").status_code == 200


def test_sign_out_needs_the_csrf_token_and_ends_the_session(
    client: Client, board_key: str, application: GatewayApplication, bus: Any
) -> None:
    csrf = pages.sign_in(client, board_key, bus)
    refused = client.post("/sign-out", data={"csrfToken": "wrong"}, follow_redirects=False)
    assert refused.status_code == 403
    assert client.get("/runs", follow_redirects=False).status_code == 200
    out = client.post("/sign-out", data={"csrfToken": csrf}, follow_redirects=False)
    assert (out.status_code, out.headers["location"]) == (303, "/sign-in")
    assert "max-age=0" in out.headers["set-cookie"].lower()
    assert application.sessions == {}
    client.cookies.clear()
    assert client.get("/workspaces", follow_redirects=False).status_code == 303


def test_sign_out_by_script_sends_the_header(client: Client, board_key: str, bus: Any) -> None:
    csrf = pages.sign_in(client, board_key, bus)
    out = client.post("/sign-out", headers={"X-CSRF-Token": csrf}, follow_redirects=False)
    assert out.status_code == 303


def test_a_sessions_csrf_token_is_derived_from_its_id() -> None:
    # The page renders the token of any live session again (after a gateway restart too),
    # although the store keeps only its hash; whoever computes it already holds the session.
    from api_gateway.domain import csrf_token_of, new_session_secret
    from api_gateway.ui.session import PageTokens

    session_id = new_session_secret()
    assert csrf_token_of(session_id) == csrf_token_of(session_id)
    assert csrf_token_of(session_id) != csrf_token_of(new_session_secret())
    assert session_id not in csrf_token_of(session_id)
    assert PageTokens().token(session_id) == csrf_token_of(session_id)
