"""Run tokens in the gateway's store: minted through the bus handler (the controller's system
principal only), hashed, one live token per run, revoked by the controller's ``run.finished``
(inbox), never minted again for an ended run, private (never published); deleted agents' keys
revoked by ``agent.deleted``, and no key created for them afterwards."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from api_gateway.application import GatewayApplication
from api_gateway.domain import (
    AgentNotFoundError,
    DeletedAgent,
    ForbiddenError,
    RunEndedError,
    RunToken,
    RunTokenUnusableError,
    UnauthenticatedError,
    hash_secret,
    is_run_token,
)
from api_gateway.inbox import controller_inbox
from api_gateway.publishing import to_contract
from contracts.base import Actor, Principal
from contracts.gateway import ApiKeyRevoked
from contracts.run_events import RunCancelRequested

_spec = importlib.util.spec_from_file_location(
    "heartbeat_fixtures", Path(__file__).parent / "heartbeat_fixtures.py"
)
assert _spec
assert _spec.loader
fx: Any = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fx
_spec.loader.exec_module(fx)


@pytest.fixture
def app() -> Any:
    application = GatewayApplication(service="gateway")
    yield application
    application.close()


@pytest.fixture
def inbox(app: GatewayApplication) -> Any:
    return partial(controller_inbox, app)


def _stored(app: GatewayApplication) -> str:
    return repr([n for n in app.recorder.select_notifications(start=1, limit=1000)])


async def test_a_minted_token_is_bound_to_its_run_and_stored_as_a_hash(
    app: GatewayApplication,
) -> None:
    company = app.create_company("Acme").id
    issued = await fx.mint(app, company)
    assert is_run_token(issued.token)
    assert issued.token.startswith("cyr_")
    assert not is_run_token("cy_board_x")
    assert issued.token not in repr(issued)
    record = app.authenticate_run_token(issued.token)
    assert (record.id, record.run_id, record.agent_id, record.company_id) == (
        issued.token_id,
        fx.RUN,
        fx.AGENT,
        company,
    )
    assert (record.issue_id, record.workspace_id, record.expires_at) == (
        fx.wire.ISSUE,
        fx.wire.WS,
        issued.expires_at,
    )
    # The store and the read models hold the hash, never the token.
    assert issued.token not in _stored(app)
    assert hash_secret(issued.token) in _stored(app)
    assert issued.token not in repr(app.read_models())
    # Every run-token event is private: nothing to publish.
    for notification in app.recorder.select_notifications(start=1, limit=100):
        domain_event = app.mapper.to_domain_event(notification)
        if isinstance(domain_event, RunToken.Event):
            assert to_contract(domain_event) is None
    # The events record the controller as the actor, and the run.
    events = [
        app.mapper.to_domain_event(n) for n in app.recorder.select_notifications(start=1, limit=99)
    ]
    issued_event = next(e for e in events if isinstance(e, RunToken.Issued))
    assert issued_event.actor == {"type": "system", "id": "heartbeat-controller"}
    assert issued_event.run_id == fx.RUN


async def test_a_second_mint_replaces_the_first(app: GatewayApplication) -> None:
    company = app.create_company("Acme").id
    first = await fx.mint(app, company)
    second = await fx.mint(app, company)
    assert first.token != second.token
    assert first.token_id != second.token_id
    with pytest.raises(UnauthenticatedError, match="replaced by a newer token"):
        app.authenticate_run_token(first.token)
    assert app.authenticate_run_token(second.token).id == second.token_id


async def test_only_a_system_principal_of_a_company_mints(app: GatewayApplication) -> None:
    company = app.create_company("Acme").id
    before = app.last_notification_id()
    for principal in (
        Principal(company_id=company, actor=Actor(type="board", id="k")),
        Principal(company_id=company, actor=Actor(type="agent", id=fx.AGENT)),
        Principal(company_id=None, actor=Actor(type="admin", id="admin")),
        Principal(company_id=None, actor=Actor(type="system", id="heartbeat-controller")),
    ):
        with pytest.raises(ForbiddenError, match="heartbeat controller"):
            await fx.mint(app, company, principal=principal)
    assert app.last_notification_id() == before


async def test_a_past_expiry_or_another_agents_run_is_refused(app: GatewayApplication) -> None:
    company = app.create_company("Acme").id
    with pytest.raises(RunTokenUnusableError, match="in the past"):
        await fx.mint(app, company, expires_in=timedelta(seconds=-1))
    await fx.mint(app, company)
    with pytest.raises(RunTokenUnusableError, match="another agent"):
        await fx.mint(app, company, agent_id=fx.OTHER_AGENT)


async def test_an_expired_token_is_refused_with_a_sentence(app: GatewayApplication) -> None:
    company = app.create_company("Acme").id
    issued = await fx.mint(app, company, expires_in=timedelta(seconds=2))
    app.authenticate_run_token(issued.token)  # works until its expiry
    while True:  # until past its expiry on the store's clock
        left = (issued.expires_at - datetime.now(UTC)).total_seconds()
        if left < 0:
            break
        await asyncio.sleep(left + 0.01)
    with pytest.raises(UnauthenticatedError, match=r"expired at .*\(its run's timeout\)"):
        app.authenticate_run_token(issued.token)


async def test_run_finished_revokes_the_token_and_no_later_mint_works(
    app: GatewayApplication, inbox: Any
) -> None:
    company = app.create_company("Acme").id
    issued = await fx.mint(app, company)
    inbox(fx.run_finished(company), fx.tracking())
    with pytest.raises(UnauthenticatedError, match="run has ended"):
        app.authenticate_run_token(issued.token)
    with pytest.raises(RunEndedError) as refused:
        await fx.mint(app, company)
    assert (refused.value.status, refused.value.code) == (409, "run_finished")
    # A redelivered event (next position) changes nothing but the position.
    before = app.last_notification_id()
    inbox(fx.run_finished(company), fx.tracking())
    assert app.last_notification_id() == before
    # The read models rebuilt from the store say the same.
    app.rebuild_read_models()
    with pytest.raises(UnauthenticatedError, match="run has ended"):
        app.authenticate_run_token(issued.token)


async def test_a_run_that_ended_before_any_mint_refuses_one(
    app: GatewayApplication, inbox: Any
) -> None:
    company = app.create_company("Acme").id
    inbox(fx.run_finished(company, status="cancelled"), fx.tracking())
    with pytest.raises(RunEndedError):
        await fx.mint(app, company)


def test_agent_deleted_revokes_that_agents_keys_only(app: GatewayApplication, inbox: Any) -> None:
    company = app.create_company("Acme").id
    other = app.create_company("Other").id
    mine, mine_key = app.create_api_key(company, "bot", "agent", fx.AGENT)
    second, _ = app.create_api_key(company, "bot-2", "agent", fx.AGENT)
    _theirs, theirs_key = app.create_api_key(company, "other bot", "agent", fx.OTHER_AGENT)
    _board, board_key = app.create_api_key(company, "board", "board")
    _elsewhere, elsewhere_key = app.create_api_key(other, "bot", "agent", fx.AGENT)
    inbox(fx.agent_deleted(company), fx.tracking())
    assert app.keys_by_id[mine.id].revoked_at is not None
    assert app.keys_by_id[second.id].revoked_at is not None
    with pytest.raises(UnauthenticatedError, match="revoked"):
        app.authenticate_key(mine_key)
    for key in (theirs_key, board_key, elsewhere_key):
        app.authenticate_key(key)
    # The revocations are public events (api_key.revoked.v1), like a revocation over HTTP.
    revoked = [
        to_contract(app.mapper.to_domain_event(n))
        for n in app.recorder.select_notifications(start=1, limit=100)
    ]
    assert [e.aggregate_id for e in revoked if isinstance(e, ApiKeyRevoked)] == [mine.id, second.id]


def test_no_key_is_created_for_an_agent_once_its_delete_is_heard(
    app: GatewayApplication, inbox: Any
) -> None:
    company = app.create_company("Acme").id
    inbox(fx.agent_deleted(company), fx.tracking())
    before = app.last_notification_id()
    with pytest.raises(AgentNotFoundError) as raised:
        app.create_api_key(company, "bot", "agent", fx.AGENT)
    assert (raised.value.code, raised.value.status) == ("not_found", 404)
    assert raised.value.details == {"agentId": fx.AGENT}
    assert "deleted" in str(raised.value)
    assert app.last_notification_id() == before
    # Other agents and board keys are not affected; the mark is private and survives a rebuild.
    app.create_api_key(company, "other bot", "agent", fx.OTHER_AGENT)
    app.create_api_key(company, "board", "board")
    stored = [app.mapper.to_domain_event(n) for n in app.recorder.select_notifications(1, 100)]
    marks = [e for e in stored if isinstance(e, DeletedAgent.Recorded)]
    assert [(m.agent_id, m.company_id) for m in marks] == [(fx.AGENT, company)]
    assert [to_contract(m) for m in marks] == [None]
    app.rebuild_read_models()
    with pytest.raises(AgentNotFoundError):
        app.create_api_key(company, "bot", "agent", fx.AGENT)
    # A second delete event (a redelivery) records no second mark.
    inbox(fx.agent_deleted(company), fx.tracking())
    again = [app.mapper.to_domain_event(n) for n in app.recorder.select_notifications(1, 100)]
    assert len([e for e in again if isinstance(e, DeletedAgent.Recorded)]) == 1


def test_other_controller_events_are_ignored(app: GatewayApplication, inbox: Any) -> None:
    company = app.create_company("Acme").id
    before = app.last_notification_id()
    event = RunCancelRequested(**fx._envelope(company, "run", fx.RUN), agent_id=fx.AGENT)
    position = fx.tracking()
    inbox(event, position)
    assert app.last_notification_id() == before
