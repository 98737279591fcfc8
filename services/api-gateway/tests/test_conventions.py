"""API.md's conventions, proven on real routes: error bodies, 400 vs 422, 413, paging, no writes.

Every refused request is also checked to have written nothing: the store's last notification id
is the same before and after.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication

Client = TestClient[Any]


@pytest.fixture
def nothing_written(application: GatewayApplication) -> Callable[[], Any]:
    """A context manager asserting that the store gained no notification inside it."""

    @contextmanager
    def check() -> Iterator[None]:
        before = application.last_notification_id()
        yield
        assert application.last_notification_id() == before, "a refused request wrote events"

    return check


def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "code", "details"}
    assert body["code"] == code
    assert body["error"].endswith("."), "the error is a sentence"
    return body


def test_malformed_json_is_400_invalid_json(
    client: Client, admin: dict[str, str], nothing_written: Any
) -> None:
    with nothing_written():
        response = client.post("/api/companies", content=b'{"name": ', headers=admin)
    _error(response, 400, "invalid_json")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"name": 42}', "name"),  # wrong type
        (b'{"name": "Acme", "issuePrefix": 7}', "issuePrefix"),  # wrong type, optional field
        (b'{"name": "Acme", "colour": "red"}', "colour"),  # unknown field
        (b'{"issuePrefix": "ACME"}', "name"),  # missing field
        (b"[]", "body"),  # not an object
        (b"", "body"),  # no body at all
    ],
)
def test_schema_mismatch_is_400_validation_failed_naming_the_field(
    client: Client, admin: dict[str, str], nothing_written: Any, body: bytes, field: str
) -> None:
    with nothing_written():
        response = client.post(
            "/api/companies", content=body, headers={**admin, "Content-Type": "application/json"}
        )
    error = _error(response, 400, "validation_failed")
    assert [f["field"] for f in error["details"]["fields"]] == [field]
    assert field in error["error"]


def test_unknown_enum_value_is_400_validation_failed(
    client: Client,
    admin: dict[str, str],
    make_company: Callable[..., dict[str, Any]],
    nothing_written: Any,
) -> None:
    company = make_company()
    with nothing_written():
        response = client.post(
            f"/api/companies/{company['id']}/api-keys",
            json={"name": "ci", "kind": "wizard"},
            headers=admin,
        )
    error = _error(response, 400, "validation_failed")
    assert error["details"]["fields"][0]["field"] == "kind"


def test_a_prefix_or_name_the_schema_rules_out_is_400_and_writes_nothing(
    client: Client, admin: dict[str, str], nothing_written: Any
) -> None:
    with nothing_written():
        response = client.post(
            "/api/companies", json={"name": "Acme", "issuePrefix": "acme"}, headers=admin
        )
    error = _error(response, 400, "validation_failed")  # the schema: 1-10 upper-case letters
    assert error["details"]["fields"][0]["field"] == "issuePrefix"
    with nothing_written():
        response = client.post("/api/companies", json={"name": "   "}, headers=admin)
    _error(response, 400, "validation_failed")  # the schema says: not only blanks


def test_body_over_256_kib_is_413(
    client: Client, admin: dict[str, str], nothing_written: Any
) -> None:
    # Exactly at the limit the body is read (and refused for its content, not its size).
    padding = "x" * (256 * 1024 - len(b'{"name": ""}'))
    at_limit = client.post("/api/companies", content=f'{{"name": "{padding}"}}', headers=admin)
    assert at_limit.status_code == 400  # a name of at most 200 characters
    with nothing_written():
        response = client.post("/api/companies", content=f'{{"name": "{padding}x"}}', headers=admin)
    error = _error(response, 413, "payload_too_large")
    assert error["details"] == {"limitBytes": 256 * 1024}


def test_unknown_company_is_404(client: Client, admin: dict[str, str]) -> None:
    response = client.get("/api/companies/00000000-0000-0000-0000-000000000000", headers=admin)
    _error(response, 404, "not_found")


def test_unknown_path_and_wrong_method_answer_json(client: Client, admin: dict[str, str]) -> None:
    _error(client.get("/api/nothing-here", headers=admin), 404, "not_found")
    _error(client.put("/api/companies", headers=admin), 405, "method_not_allowed")


def test_lists_are_arrays_with_x_total_count(
    client: Client, admin: dict[str, str], make_company: Callable[..., dict[str, Any]]
) -> None:
    ids = [make_company(f"Company {n}")["id"] for n in range(7)]
    # Default page: everything (fewer than 50), oldest first.
    response = client.get("/api/companies", headers=admin)
    assert response.status_code == 200
    assert response.headers["X-Total-Count"] == "7"
    assert [c["id"] for c in response.json()] == ids
    # A page in the middle.
    response = client.get("/api/companies?limit=3&offset=2", headers=admin)
    assert response.headers["X-Total-Count"] == "7"
    assert [c["id"] for c in response.json()] == ids[2:5]
    # Past the end: an empty array, the same total.
    response = client.get("/api/companies?offset=50", headers=admin)
    assert (response.json(), response.headers["X-Total-Count"]) == ([], "7")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=-5", "limit"),
        ("limit=ten", "limit"),
        ("limit=99999999999999999999999", "limit"),
        ("offset=-1", "offset"),
    ],
)
def test_paging_out_of_range_is_400(
    client: Client, admin: dict[str, str], query: str, field: str
) -> None:
    error = _error(client.get(f"/api/companies?{query}", headers=admin), 400, "validation_failed")
    assert error["details"]["fields"][0]["field"] == field
    assert error["details"]["fields"][0]["source"] == "query"


def test_limit_at_the_bounds_is_accepted(
    client: Client, admin: dict[str, str], make_company: Callable[..., dict[str, Any]]
) -> None:
    make_company("One")
    make_company("Two")
    assert len(client.get("/api/companies?limit=1", headers=admin).json()) == 1
    assert client.get("/api/companies?limit=200", headers=admin).status_code == 200


def test_create_company_answers_201_with_the_company(
    client: Client, admin: dict[str, str], application: GatewayApplication
) -> None:
    response = client.post("/api/companies", json={"name": "Acme Corp"}, headers=admin)
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "name", "issuePrefix", "createdAt", "updatedAt", "hostTrusted",
                         "allowedRoots"}  # fmt: skip
    assert (body["name"], body["issuePrefix"]) == ("Acme Corp", "ACME")
    assert body["createdAt"].endswith("Z")
    assert application.company(body["id"]).name == "Acme Corp"
    given = client.post("/api/companies", json={"name": "Acme", "issuePrefix": "AC"}, headers=admin)
    assert given.json()["issuePrefix"] == "AC"
