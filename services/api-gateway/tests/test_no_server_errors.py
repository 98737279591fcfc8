"""Whatever a client sends, the gateway never answers 5xx for it (API.md)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError, OperationalError
from litestar.testing import TestClient

from api_gateway.http.errors import problem_of

Client = TestClient[Any]

BODIES = [
    b"",
    b"null",
    b"{",
    b"\xff\xfe\x00",
    b'{"name": "\\ud800"}',
    b"[" * 10_000 + b"]" * 10_000,
    b'{"name": {"nested": [1, 2, {"x": null}]}}',
    b'{"name": "Acme", "issuePrefix": "' + b"A" * 5000 + b'"}',
    b'{"key": 1e400}',
    b'{"name": "a", "kind": "board", "agentId": 5}',
]
IDS = ["x", "%00", "..", "a" * 2000, "\u00e9\u00e8", "00000000-0000-0000-0000-000000000000"]


@pytest.fixture
def company_id(make_company: Callable[..., dict[str, Any]]) -> str:
    return str(make_company()["id"])


def test_odd_bodies_never_answer_5xx(
    client: Client, admin: dict[str, str], company_id: str
) -> None:
    for url in ("/api/companies", f"/api/companies/{company_id}/api-keys", "/api/session"):
        for body in BODIES:
            response = client.post(url, content=body, headers=admin)
            assert 400 <= response.status_code < 500, (url, body[:40], response.text)
            assert response.json()["code"]


def test_odd_ids_and_headers_never_answer_5xx(client: Client, admin: dict[str, str]) -> None:
    for odd in IDS:
        for method, url in (
            ("GET", f"/api/companies/{odd}"),
            ("GET", f"/api/companies/{odd}/api-keys"),
            ("DELETE", f"/api/api-keys/{odd}"),
            ("GET", f"/api/companies/{odd}/events/stream"),
        ):
            response = client.request(method, url, headers=admin)
            assert 400 <= response.status_code < 500, (method, url, response.text)
    odd_keys = [b"Bearer \t", b"Bearer " + b"x" * 10_000, "Bearer \u00e9".encode("latin-1")]
    for header in [*odd_keys, b"Bearer a b c"]:
        response = client.get("/api/companies", headers={b"Authorization": header})
        assert response.status_code == 401
    cookie = "clipyard_session=\u00e9\u00e9".encode("latin-1")
    response = client.get("/api/companies", headers={b"Cookie": cookie})
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (OperationalError("connection refused"), 503, "service_unavailable"),
        (sqlite3.OperationalError("database is locked"), 503, "service_unavailable"),
        (IntegrityError("version conflict"), 409, "state_conflict"),
    ],
)
def test_a_store_failure_answers_retry_or_conflict_not_500(
    error: Exception, status: int, code: str
) -> None:
    problem = problem_of(error)
    assert (problem.status, problem.code) == (status, code)
    assert "Retry in a moment" in problem.message or "Read it again" in problem.message
