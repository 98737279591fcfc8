"""The session cookie moved from ``/api`` to ``/``: every sign-in and sign-out (the page's and
``/api/session``'s) also expires a ``clipyard_session`` cookie an older gateway set on ``/api``, so
it can neither shadow the new session on API calls nor survive a sign-out."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts import heartbeat_subjects, workspace_subjects
from contracts.base import Ok

Client = TestClient[Any]
_META = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


@pytest.fixture
def board_key(company: str, make_board_key: Callable[[str], str]) -> str:
    return make_board_key(company)


def _cookies(response: Any) -> dict[str, dict[str, str]]:
    """``Set-Cookie`` headers by path: ``{path: {"value": ..., "max-age": ...}}``."""
    found: dict[str, dict[str, str]] = {}
    for header in response.headers.get_list("set-cookie"):
        name_value, *attributes = [part.strip() for part in header.split(";")]
        name, _, value = name_value.partition("=")
        assert name == "clipyard_session", header
        fields = {"value": value.strip('"')}
        for attribute in attributes:
            key, _, raw = attribute.partition("=")
            fields[key.lower()] = raw
        found[fields["path"]] = fields
    return found


def _plant_old_cookie(client: Client, board_key: str) -> str:
    """Another live session whose cookie sits on ``/api``, as an older gateway set it (the
    cookies already in the jar stay)."""
    kept = [cookie for cookie in client.cookies.jar if cookie.name == "clipyard_session"]
    response = client.post("/api/session", json={"key": board_key})
    assert response.status_code == 200, response.text
    old = client.cookies["clipyard_session"]
    client.cookies.clear()
    for cookie in kept:
        client.cookies.jar.set_cookie(cookie)
    client.cookies.set("clipyard_session", old, domain="testserver.local", path="/api")
    return old


def _paths_in_jar(client: Client) -> set[str]:
    return {cookie.path for cookie in client.cookies.jar if cookie.name == "clipyard_session"}


def test_api_sign_in_and_sign_out_expire_the_old_path(
    client: Client, board_key: str, company: str
) -> None:
    _plant_old_cookie(client, board_key)
    signed_in = client.post("/api/session", json={"key": board_key})
    assert signed_in.status_code == 200, signed_in.text
    cookies = _cookies(signed_in)
    assert cookies["/"]["value"]
    assert (cookies["/api"]["value"], cookies["/api"]["max-age"]) == ("", "0")
    assert _paths_in_jar(client) == {"/"}
    csrf = signed_in.json()["csrfToken"]
    _plant_old_cookie(client, board_key)
    signed_out = client.delete("/api/session", headers={"X-CSRF-Token": csrf})
    assert signed_out.status_code == 204, signed_out.text
    cookies = _cookies(signed_out)
    assert cookies["/"]["max-age"] == "0"
    assert (cookies["/api"]["value"], cookies["/api"]["max-age"]) == ("", "0")
    assert _paths_in_jar(client) == set()
    # Nothing is left to authenticate an API call.
    assert client.get(f"/api/companies/{company}").status_code == 401


def test_page_sign_in_and_sign_out_expire_the_old_path(
    client: Client, board_key: str, company: str, bus: Any
) -> None:
    _plant_old_cookie(client, board_key)
    for body in ({"json": {"key": board_key}}, {"data": {"key": board_key}}):
        signed_in = client.post("/sign-in", follow_redirects=False, **body)  # type: ignore[arg-type]
        assert signed_in.status_code in (200, 303), signed_in.text
        cookies = _cookies(signed_in)
        assert cookies["/"]["value"]
        assert (cookies["/api"]["value"], cookies["/api"]["max-age"]) == ("", "0")
        assert _paths_in_jar(client) == {"/"}
    _plant_old_cookie(client, board_key)
    assert client.post("/sign-in", json={"key": board_key}).status_code == 200
    assert _paths_in_jar(client) == {"/"}
    for subject in (heartbeat_subjects.RUN_LIST, heartbeat_subjects.AGENT_LIST,
                    workspace_subjects.ISSUE_LIST, workspace_subjects.WORKSPACE_LIST_SUMMARIES):  # fmt: skip
        bus.replies[subject] = Ok(result={"items": [], "total": 0})
    runs = client.get("/runs")
    assert runs.status_code == 200, runs.text
    found = _META.search(runs.text)
    assert found, runs.text
    _plant_old_cookie(client, board_key)
    signed_out = client.post(
        "/sign-out", data={"csrfToken": found.group(1)}, follow_redirects=False
    )
    assert signed_out.status_code == 303
    cookies = _cookies(signed_out)
    assert cookies["/"]["max-age"] == "0"
    assert (cookies["/api"]["value"], cookies["/api"]["max-age"]) == ("", "0")
    assert _paths_in_jar(client) == set()
    # Nothing is left to authenticate an API call.
    assert client.get(f"/api/companies/{company}").status_code == 401
