"""A run token goes from the gateway to the controller in one bus reply and nowhere else: minted
over a real NATS through the gateway's endpoint, then used over HTTP (accepted, refused for a
wrong ``X-Run-Id``, passed to a failing service, refused once its run finished), it never shows
in the gateway's store, read models, logs, spans, responses or output."""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import nats
import pytest
from litestar.testing import AsyncTestClient

from api_gateway.app import create_app
from api_gateway.application import GatewayApplication
from api_gateway.endpoints import RunTokenEndpoints
from api_gateway.inbox import controller_inbox
from api_gateway.settings import GatewaySettings
from contracts import heartbeat_subjects as hb
from contracts.base import Actor, Ok, Principal
from contracts.run_tokens import MintRunToken, RunTokenIssued
from eventstore import StoreExecutor
from natsbus import BusClient, BusService
from servicekit.routes import mount

_spec = importlib.util.spec_from_file_location(
    "heartbeat_fixtures", Path(__file__).parent / "heartbeat_fixtures.py"
)
assert _spec
assert _spec.loader
fx: Any = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fx
_spec.loader.exec_module(fx)
wire = fx.wire


def _leaks(token: str, text: str) -> list[str]:
    secret = token.removeprefix("cyr_")
    parts = (token, secret, secret[:12], secret[-12:])
    return [part for part in parts if part in text]


@pytest.fixture
async def served_mint(
    nats_server: Any, application: GatewayApplication
) -> AsyncIterator[BusClient]:
    """The gateway's mint endpoint on a real NATS; a client to ask it as the controller."""
    nc = await nats.connect(nats_server.url)
    executor = StoreExecutor(name="gateway-store-test")
    service = await BusService.start(nc, name="api-gateway", version="0.1.0")
    await mount(service, RunTokenEndpoints(application, executor))
    try:
        yield BusClient(nc)
    finally:
        await service.stop()
        await nc.drain()
        executor.close()


@pytest.mark.integration
async def test_the_run_token_is_only_in_the_mint_reply(
    served_mint: BusClient,
    application: GatewayApplication,
    bus: Any,
    settings: GatewaySettings,
    span_recorder: Any,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    company = application.create_company("Acme").id
    request = MintRunToken(
        principal=fx.controller_principal(company),
        run_id=fx.RUN,
        agent_id=fx.AGENT,
        issue_id=wire.ISSUE,
        workspace_id=wire.WS,
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
    )
    reply = await served_mint.request(hb.RUN_TOKEN_MINT, request, timeout=5)
    assert isinstance(reply, Ok), reply
    issued = msgspec.convert(reply.result, RunTokenIssued)
    token = issued.token
    assert token.startswith("cyr_")
    # A board principal is refused over the bus as well.
    refused = await served_mint.request(
        hb.RUN_TOKEN_MINT,
        msgspec.structs.replace(
            request, principal=Principal(company_id=company, actor=Actor(type="board", id="k"))
        ),
        timeout=5,
    )
    assert getattr(refused, "status", None) == 403

    bus.replies[hb.RUN_GET] = wire.ok(fx.run(company))

    def broken(message: Any) -> Any:
        raise RuntimeError(f"could not send {message!r}")

    bus.replies[hb.AGENT_WAKE] = broken
    auth = {"Authorization": f"Bearer {token}"}
    responses = []
    app = create_app(application=application, bus=bus, settings=settings)
    async with AsyncTestClient(app, raise_server_exceptions=False) as client:
        responses.append(await client.get(f"/api/runs/{fx.RUN}", headers=auth))
        assert responses[-1].status_code == 200
        responses.append(
            await client.get(f"/api/runs/{fx.RUN}", headers={**auth, "X-Run-Id": fx.WAKE})
        )
        assert responses[-1].status_code == 403
        responses.append(await client.post(f"/api/agents/{fx.AGENT}/wakeup", json={}, headers=auth))
        assert responses[-1].status_code == 500
        controller_inbox(application, fx.run_finished(company), fx.tracking())
        responses.append(await client.get(f"/api/runs/{fx.RUN}", headers=auth))
        assert responses[-1].status_code == 401
        responses.append(
            await client.get(f"/api/runs/{fx.RUN}", headers={"Authorization": f"Bearer {token}x"})
        )
        assert responses[-1].status_code == 401

    # Responses and headers.
    for response in responses:
        assert _leaks(token, response.text) == []
        assert _leaks(token, repr(response.headers.multi_items())) == []
    # The store (every stored event) and the read models.
    stored = application.recorder.select_notifications(start=1, limit=10_000)
    assert stored
    for notification in stored:
        assert _leaks(token, notification.state.decode("utf-8", "replace")) == []
    assert _leaks(token, repr(application.read_models())) == []
    # The services the gateway asked never received it.
    for sent in bus.sent:
        assert _leaks(token, repr(sent.message)) == []
        assert _leaks(token, msgspec.json.encode(sent.message).decode()) == []
    # Logs (messages, arguments, extras, tracebacks), spans, output.
    assert any("unhandled error" in record.getMessage() for record in caplog.records)
    assert _leaks(token, caplog.text) == []
    for record in caplog.records:
        assert _leaks(token, repr(vars(record))) == [], record.getMessage()
    spans = span_recorder.finished()
    assert any(hb.RUN_TOKEN_MINT in span.name for span in spans)
    for span in spans:
        assert _leaks(token, span.to_json()) == [], span.name
    out, err = capfd.readouterr()
    assert _leaks(token, out + err) == []
