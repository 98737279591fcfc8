"""Run tokens and agent keys over HTTP: a run token authenticates as its agent bound to its run
and issue (the principal the services get says so), stops at its expiry and when its run
finishes, and must agree with ``X-Run-Id``; agent keys are issued only for agents the controller
confirms in the company."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api_gateway.application import GatewayApplication
from api_gateway.inbox import controller_inbox
from contracts import heartbeat_subjects as hb
from contracts.agents import GetAgent, GetRun
from contracts.base import ErrorReply

_spec = importlib.util.spec_from_file_location(
    "heartbeat_fixtures", Path(__file__).parent / "heartbeat_fixtures.py"
)
assert _spec
assert _spec.loader
fx: Any = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fx
_spec.loader.exec_module(fx)
wire = fx.wire

Client = TestClient[Any]
RUN_URL = f"/api/runs/{fx.RUN}"


def _token(application: GatewayApplication, company: str, **kwargs: Any) -> str:
    issued = asyncio.run(fx.mint(application, company, **kwargs))
    token: str = issued.token
    return token


@pytest.fixture
def scripted(bus: Any, company: str) -> Any:
    bus.replies[hb.RUN_GET] = wire.ok(fx.run(company))
    bus.replies[hb.AGENT_GET] = wire.ok(fx.agent(company))
    return bus


def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == code
    assert body["error"].endswith("."), "the error is a sentence"
    return body


def test_a_run_token_acts_as_its_agent_bound_to_its_run_and_issue(
    client: Client, application: GatewayApplication, scripted: Any, company: str
) -> None:
    token = _token(application, company)
    response = client.get(RUN_URL, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    assert response.json()["id"] == fx.RUN
    (sent,) = scripted.sent
    assert isinstance(sent.message, GetRun)
    principal = sent.message.principal
    assert principal.company_id == company
    assert (principal.actor.type, principal.actor.id) == ("agent", fx.AGENT)
    assert (principal.run_id, principal.issue_id, principal.run_bound) == (
        fx.RUN,
        wire.ISSUE,
        True,
    )


@pytest.mark.parametrize("header", ["X-Run-Id", "X-Paperclip-Run-Id"])
def test_the_run_header_is_optional_and_must_match(
    client: Client, application: GatewayApplication, scripted: Any, company: str, header: str
) -> None:
    auth = {"Authorization": f"Bearer {_token(application, company)}"}
    assert client.get(RUN_URL, headers={**auth, header: fx.RUN}).status_code == 200
    assert client.get(RUN_URL, headers={**auth, header: fx.RUN.upper()}).status_code == 200
    sent = len(scripted.sent)
    refused = client.get(RUN_URL, headers={**auth, header: fx.WAKE})
    body = _error(refused, 403, "forbidden")
    assert header in body["error"]
    assert body["details"] == {"header": header}
    assert len(scripted.sent) == sent, "a refused request sends nothing"
    # A mutation too (the wake) is refused before anything is sent.
    refused = client.post(
        f"/api/agents/{fx.AGENT}/wakeup", json={}, headers={**auth, header: "not-a-run"}
    )
    _error(refused, 403, "forbidden")
    assert len(scripted.sent) == sent


def test_an_expired_run_token_is_401(
    client: Client, application: GatewayApplication, scripted: Any, company: str
) -> None:
    token = _token(application, company, expires_in=timedelta(seconds=2))
    expired_by = datetime.now(UTC) + timedelta(seconds=2)  # minted before now: expires sooner
    auth = {"Authorization": f"Bearer {token}"}
    assert client.get(RUN_URL, headers=auth).status_code == 200
    while (left := (expired_by - datetime.now(UTC)).total_seconds()) >= 0:
        time.sleep(left + 0.01)  # until past its expiry on the store's clock
    body = _error(client.get(RUN_URL, headers=auth), 401, "unauthenticated")
    assert "expired" in body["error"]
    assert body["details"] == {"runId": fx.RUN}


def test_a_run_token_stops_working_when_the_inbox_hears_its_run_finish(
    client: Client, application: GatewayApplication, scripted: Any, company: str
) -> None:
    auth = {"Authorization": f"Bearer {_token(application, company)}"}
    assert client.get(RUN_URL, headers=auth).status_code == 200
    controller_inbox(application, fx.run_finished(company), fx.tracking())
    response = client.get(RUN_URL, headers=auth)
    body = _error(response, 401, "unauthenticated")
    assert "This run token's run has ended" in body["error"]
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_an_unknown_run_token_is_401(client: Client, scripted: Any) -> None:
    response = client.get(RUN_URL, headers={"Authorization": "Bearer cyr_nothing"})
    body = _error(response, 401, "unauthenticated")
    assert "run token is not known" in body["error"]
    assert scripted.sent == []


def test_a_board_key_creates_an_agent_key_for_a_confirmed_agent(
    client: Client, application: GatewayApplication, scripted: Any, company: str, board: Any
) -> None:
    url = f"/api/companies/{company}/api-keys"
    created = client.post(
        url, json={"name": "coder key", "kind": "agent", "agentId": fx.AGENT}, headers=board
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["kind"], body["agentId"]) == ("agent", fx.AGENT)
    (asked,) = scripted.sent
    assert asked.subject == hb.AGENT_GET
    assert isinstance(asked.message, GetAgent)
    assert asked.message.agent_id == fx.AGENT
    assert asked.message.principal.company_id == company
    assert asked.message.principal.actor.type == "board"
    # The key acts as the agent (not run-bound).
    client.get(RUN_URL, headers={"Authorization": f"Bearer {body['key']}"})
    principal = scripted.sent[-1].message.principal
    assert (principal.actor.type, principal.actor.id, principal.run_bound) == (
        "agent",
        fx.AGENT,
        False,
    )
    # An agent key may not create keys.
    refused = client.post(
        url,
        json={"name": "x", "kind": "agent", "agentId": fx.AGENT},
        headers={"Authorization": f"Bearer {body['key']}"},
    )
    _error(refused, 403, "forbidden")


@pytest.mark.parametrize(
    ("reply", "status", "code"),
    [
        (ErrorReply(code="not_found", message="There is no agent.", status=404), 404, "not_found"),
        (ErrorReply(code="timeout", message="No answer.", status=504), 504, "timeout"),
    ],
)
def test_an_agent_key_for_an_agent_the_controller_does_not_confirm_is_refused(
    client: Client,
    application: GatewayApplication,
    bus: Any,
    company: str,
    board: Any,
    reply: ErrorReply,
    status: int,
    code: str,
) -> None:
    bus.replies[hb.AGENT_GET] = reply
    before = application.last_notification_id()
    response = client.post(
        f"/api/companies/{company}/api-keys",
        json={"name": "ghost", "kind": "agent", "agentId": fx.OTHER_AGENT},
        headers=board,
    )
    body = _error(response, status, code)
    if status == 404:
        assert body["details"] == {"agentId": fx.OTHER_AGENT, "field": "agentId"}
        assert fx.OTHER_AGENT in body["error"]
    assert application.last_notification_id() == before


def test_a_run_token_reads_the_event_stream_only_while_its_run_runs(
    client: Client, application: GatewayApplication, scripted: Any, company: str
) -> None:
    # The SSE endpoint re-authenticates with the same function: a finished run's token fails.
    auth = {"Authorization": f"Bearer {_token(application, company)}"}
    controller_inbox(application, fx.run_finished(company), fx.tracking())
    response = client.get(f"/api/companies/{company}/events/stream", headers=auth)
    _error(response, 401, "unauthenticated")
