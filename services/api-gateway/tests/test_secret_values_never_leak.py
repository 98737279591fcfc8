"""A secret's value goes to git-credentials and nowhere else: not into an error body (whatever is
wrong with the request), a response, a header, a log record or a span of the gateway."""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from contracts import credential_subjects as subjects
from contracts.credentials import CreateSecret, RotateSecret

_spec = importlib.util.spec_from_file_location(
    "secret_fixtures", Path(__file__).parent / "secret_fixtures.py"
)
assert _spec
assert _spec.loader
fake: Any = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fake  # its dataclasses look their module up
_spec.loader.exec_module(fake)

Client = TestClient[Any]

CANARY = "CanaryZ9qX7"
"""Planted in every value; it must be found only in the commands the fake service received."""
PARTS = (CANARY, CANARY[:7], CANARY[5:])
"""The canary and pieces of it: a cut-off echo of a value counts as a leak too."""
TOO_LONG = CANARY * (65536 // len(CANARY) + 1)
OVER_THE_BODY_LIMIT = CANARY * (256 * 1024 // len(CANARY) + 1)

BAD_BODIES: list[tuple[dict[str, Any], str]] = [
    ({"name": "GITHUB_TOKEN", "value": TOO_LONG}, "value"),
    ({"name": "GITHUB_TOKEN", "value": ""}, "value"),
    ({"name": "GITHUB_TOKEN", "value": CANARY, "note": "ci"}, "note"),
    ({"name": "GITHUB_TOKEN", "valeu": CANARY}, "valeu"),
    ({"value": CANARY}, "name"),
    ({"name": f"ghp-{CANARY}", "value": CANARY}, "name"),  # a token pasted as the name
    ({"name": "GITHUB_TOKEN", "value": [CANARY]}, "value"),
    ({"name": "GITHUB_TOKEN", "value": {CANARY: CANARY}}, "value"),
]
MALFORMED = [
    f'{{"name": "GITHUB_TOKEN", "value": "{CANARY}',  # truncated
    f'{{"name": "GITHUB_TOKEN", "value": "{CANARY}\\q"}}',  # invalid escape
    f'{{"name": "GITHUB_TOKEN", "value": "{CANARY}",}}',  # trailing comma
    f'{{"name": "GITHUB_TOKEN", "value": {CANARY}}}',  # unquoted
    f'{{"name": "GITHUB_TOKEN", "value": "{CANARY}\x01"}}',  # control character
]


def _leaks(text: str) -> list[str]:
    return [part for part in PARTS if part in text]


def _assert_clean(response: Any) -> None:
    assert _leaks(response.text) == [], response.text[:500]
    assert _leaks(repr(response.headers.multi_items())) == []


@pytest.mark.parametrize(("body", "field"), BAD_BODIES)
def test_a_bad_create_body_names_the_field_never_the_value(
    client: Client, bus: Any, company: str, board: dict[str, str], body: dict[str, Any], field: str
) -> None:
    response = client.post(f"/api/companies/{company}/secrets", json=body, headers=board)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["code"] == "validation_failed"
    assert [one["field"] for one in error["details"]["fields"]] == [field]
    _assert_clean(response)
    assert bus.sent == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"value": TOO_LONG}, "value"),
        ({"value": ""}, "value"),
        ({"value": CANARY, "name": "GITHUB_TOKEN"}, "name"),
        ({"value": 7}, "value"),
        ({}, "value"),
    ],
)
def test_a_bad_rotate_body_names_the_field_never_the_value(
    client: Client, bus: Any, board: dict[str, str], body: dict[str, Any], field: str
) -> None:
    response = client.put(
        "/api/secrets/5ec0e7a1-1b2c-4d3e-8f4a-5b6c7d8e9f00", json=body, headers=board
    )
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["code"] == "validation_failed"
    assert [one["field"] for one in error["details"]["fields"]] == [field]
    _assert_clean(response)
    assert bus.sent == []


@pytest.mark.parametrize("raw", MALFORMED)
def test_malformed_json_never_shows_the_value(
    client: Client, bus: Any, company: str, board: dict[str, str], raw: str
) -> None:
    headers = {**board, "Content-Type": "application/json"}
    for response in (
        client.post(f"/api/companies/{company}/secrets", content=raw, headers=headers),
        client.put(
            "/api/secrets/5ec0e7a1-1b2c-4d3e-8f4a-5b6c7d8e9f00",
            content=raw.replace('"name": "GITHUB_TOKEN", ', ""),
            headers=headers,
        ),
    ):
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "invalid_json"
        _assert_clean(response)
    assert bus.sent == []


def test_a_body_over_the_limit_is_413_without_the_value(
    client: Client, bus: Any, company: str, board: dict[str, str]
) -> None:
    for response in (
        client.post(
            f"/api/companies/{company}/secrets",
            json={"name": "GITHUB_TOKEN", "value": OVER_THE_BODY_LIMIT},
            headers=board,
        ),
        client.put(
            "/api/secrets/5ec0e7a1-1b2c-4d3e-8f4a-5b6c7d8e9f00",
            json={"value": OVER_THE_BODY_LIMIT},
            headers=board,
        ),
    ):
        assert response.status_code == 413
        assert response.json()["code"] == "payload_too_large"
        _assert_clean(response)
    assert bus.sent == []


def test_the_canary_reaches_git_credentials_and_nothing_else(
    client: Client,
    bus: Any,
    company: str,
    board: dict[str, str],
    admin: dict[str, str],
    span_recorder: Any,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    credentials = fake.FakeCredentials().install(bus)
    url = f"/api/companies/{company}/secrets"
    responses = []

    def send(method: str, path: str, **kwargs: Any) -> Any:
        response = client.request(method, path, **kwargs)
        responses.append(response)
        return response

    created = send(
        "POST", url, json={"name": "GITHUB_TOKEN", "value": f"v1-{CANARY}"}, headers=board
    )
    assert created.status_code == 201
    secret = created.json()["id"]
    assert (
        send("POST", url, json={"name": "GITHUB_TOKEN", "value": CANARY}, headers=board).status_code
        == 409
    )
    rotate = f"/api/secrets/{secret}"
    assert send("PUT", rotate, json={"value": f"v2-{CANARY}"}, headers=board).status_code == 200
    assert send("PUT", rotate, json={"value": f"v3-{CANARY}"}, headers=admin).status_code == 200
    assert (
        send(
            "PUT",
            "/api/secrets/00000000-0000-4000-8000-000000000000",
            json={"value": CANARY},
            headers=board,
        ).status_code
        == 404
    )
    assert send("GET", url, headers=board).status_code == 200
    for body, _ in BAD_BODIES:
        assert send("POST", url, json=body, headers=board).status_code == 400
    for raw in MALFORMED:
        headers = {**board, "Content-Type": "application/json"}
        assert send("POST", url, content=raw, headers=headers).status_code == 400
    assert (
        send("PUT", rotate, json={"value": OVER_THE_BODY_LIMIT}, headers=board).status_code == 413
    )

    # A bus failure that describes the command it failed to send (as a client library might)
    # reaches the gateway's error log: the command's repr hides the value.
    def broken(message: Any) -> Any:
        raise RuntimeError(f"could not send {message!r}")

    bus.replies[subjects.SECRET_CREATE] = broken
    bus.replies[subjects.SECRET_ROTATE] = broken
    failed = send("POST", url, json={"name": "GH_TOKEN", "value": f"v1-{CANARY}"}, headers=board)
    assert failed.status_code == 500
    assert send("PUT", rotate, json={"value": f"v4-{CANARY}"}, headers=board).status_code == 500
    # No service at all.
    bus.replies.clear()
    failed = send("POST", url, json={"name": "GH_TOKEN", "value": CANARY}, headers=board)
    assert failed.status_code == 503
    assert send("DELETE", rotate, headers=board).status_code == 503

    # The values did reach git-credentials (so the canary was really sent) ...
    assert credentials.secrets[secret].values == [f"v{n}-{CANARY}" for n in (1, 2, 3)]
    values = [
        sent.message.value
        for sent in bus.sent
        if isinstance(sent.message, CreateSecret | RotateSecret)
    ]
    assert all(CANARY in value for value in values)
    assert len(values) == 8
    # ... and to nothing else: responses, logs (message, arguments, extras, tracebacks), spans.
    for response in responses:
        _assert_clean(response)
    assert any("unhandled error" in record.getMessage() for record in caplog.records)
    assert _leaks(caplog.text) == []
    for record in caplog.records:
        assert _leaks(repr(vars(record))) == [], record.getMessage()
    spans = span_recorder.finished()
    assert len([s for s in spans if s.name.startswith(("POST", "PUT", "GET", "DELETE"))]) >= len(
        responses
    )
    for span in spans:
        assert _leaks(span.to_json()) == [], span.name
    out, err = capfd.readouterr()
    assert _leaks(out + err) == []
