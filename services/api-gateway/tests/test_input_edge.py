"""The edge's own checks (``api_gateway.http.input_guard``): an id in a path that is not a UUID is
404 naming the parameter and never reaches a service; a NUL byte or another control character in
a body (at any depth, keys too), a query parameter or a path is 400 ``validation_failed`` naming
the field; tab, line feed and carriage return are text; a 405 says which methods are allowed."""

from __future__ import annotations

from typing import Any

from litestar.testing import TestClient

ISSUE = "3e8c3f41-7d76-4f1b-8f41-4f5a6b7c8d9e"


def test_an_id_that_is_not_a_uuid_is_not_found_and_reaches_no_service(
    client: TestClient[Any], board: dict[str, str], bus: Any
) -> None:
    traversal = client.get("/api/issues/..%2F..%2Fetc", headers=board)
    assert traversal.status_code == 404, traversal.text  # no route has such a path
    for bad in ("..etc", "x" * 5000, "1", f"{ISSUE}x", "%20" + ISSUE):
        answer = client.get(f"/api/issues/{bad}", headers=board)
        assert answer.status_code == 404, answer.text
        body = answer.json()
        assert body["code"] == "not_found"
        assert body["details"] == {"field": "issueId"}, body
        assert "UUID" in body["error"]
        assert len(answer.text) < 1000, "a long id is not echoed whole"
    answer = client.post("/api/agents/..etc/wake", headers=board, json={})
    assert answer.status_code == 404, answer.text
    assert bus.sent == [], "nothing was asked of a service"


def test_control_characters_in_what_a_client_sends_are_refused_naming_the_field(
    client: TestClient[Any], board: dict[str, str], company: str, bus: Any
) -> None:
    projects = f"/api/companies/{company}/projects"
    for body, field in (
        ({"name": "a\u0000b"}, "name"),
        ({"name": "ok", "executionWorkspacePolicy": {"workspaceStrategy": {
            "provisionCommand": "make\u001b[31m"}}},
         "executionWorkspacePolicy.workspaceStrategy.provisionCommand"),
        ({"name": "ok", "tags": [{"x": 1}, {"k\u0007": "v"}]}, "tags[1].k\u0007"),
    ):  # fmt: skip
        answer = client.post(projects, headers=board, json=body)
        assert answer.status_code == 400, answer.text
        found = answer.json()
        assert found["code"] == "validation_failed", found
        assert found["details"]["fields"][0]["field"] == field, found
        assert "control character" in found["error"], found
    answer = client.get(projects, headers=board, params={"q": "a\u0000"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["details"]["fields"][0]["source"] == "query"
    assert bus.sent == [], "nothing was asked of a service"


def test_tabs_and_newlines_are_text(
    client: TestClient[Any], board: dict[str, str], company: str, bus: Any
) -> None:
    answer = client.post(f"/api/companies/{company}/projects", headers=board,
                         json={"name": "two\tcolumns\r\nand lines"})  # fmt: skip
    assert answer.status_code != 400 or "control character" not in answer.text, answer.text


def test_a_method_the_route_does_not_have_is_405_with_allow(
    client: TestClient[Any], board: dict[str, str], company: str
) -> None:
    answer = client.put(f"/api/companies/{company}/projects", headers=board, json={})
    assert answer.status_code == 405, answer.text
    assert set(answer.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST"}


def test_a_time_given_as_a_number_is_refused_naming_the_field(
    client: TestClient[Any], board: dict[str, str], bus: Any
) -> None:
    answer = client.patch(f"/api/execution-workspaces/{ISSUE}", headers=board,
                          json={"cleanupEligibleAt": 12345})  # fmt: skip
    assert answer.status_code == 400, answer.text
    assert answer.json()["details"]["fields"][0]["field"] == "cleanupEligibleAt"
    assert "ISO 8601" in answer.json()["error"]
    assert bus.sent == [], "nothing was asked of a service"


def test_the_checks_hold_whatever_the_body_claims_to_be_and_however_deep_it_nests(
    client: TestClient[Any], board: dict[str, str], company: str, bus: Any
) -> None:
    projects = f"/api/companies/{company}/projects"
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "APPLICATION/JSON"):
        answer = client.post(projects, headers={**board, "Content-Type": content_type},
                             content='{"name": "a\\u0000b"}')  # fmt: skip
        assert answer.status_code == 400, (content_type, answer.text)
    deep = "[" * 900 + "]" * 900
    answer = client.post(projects, headers={**board, "Content-Type": "application/json"},
                         content=f'{{"name": "x", "tags": {deep}}}')  # fmt: skip
    assert answer.status_code == 400, answer.text
    assert "nests deeper" in answer.json()["error"]
    answer = client.patch(f"/api/execution-workspaces/{ISSUE}", headers=board,
                          json={"cleanupEligibleAt": "1700000000"})  # fmt: skip
    assert answer.status_code == 400, answer.text
    answer = client.get(f"/api/issues/{ISSUE}%0A", headers=board)
    assert answer.status_code == 404, answer.text
    assert bus.sent == [], "nothing was asked of a service"
