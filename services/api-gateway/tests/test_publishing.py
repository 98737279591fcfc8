"""Stored gateway events map to public contracts; sessions and key material never leave."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from api_gateway.application import GatewayApplication
from api_gateway.publishing import to_contract
from contracts.base import Actor
from contracts.events import AnyEvent
from contracts.gateway import ApiKeyCreated, ApiKeyRevoked, CompanyCreated
from eventstore import Cause, acting


@pytest.fixture
def app() -> Iterator[GatewayApplication]:
    application = GatewayApplication(service="gateway")
    yield application
    application.close()


def _stored(app: GatewayApplication) -> list[Any]:
    return [
        app.mapper.to_domain_event(n) for n in app.recorder.select_notifications(start=1, limit=100)
    ]


def test_companies_and_keys_are_public_sessions_are_not(app: GatewayApplication) -> None:
    with acting(Cause(actor=Actor(type="admin", id="admin"), reason="onboarding")):
        company = app.create_company("Acme Corp")
        record, key = app.create_api_key(company.id, "ci", "board")
    app.start_session(key, ttl=60)
    app.revoke_api_key(record.id)

    published = [to_contract(e) for e in _stored(app)]
    created, key_created, session_started, key_revoked = published
    assert isinstance(created, CompanyCreated)
    assert created.aggregate == "company"
    assert created.company_id == created.aggregate_id == company.id
    assert (created.name, created.issue_prefix) == ("Acme Corp", "ACME")
    assert created.actor == Actor(type="admin", id="admin")
    assert created.reason == "onboarding"
    assert isinstance(key_created, ApiKeyCreated)
    assert (key_created.company_id, key_created.kind, key_created.aggregate_version) == (
        company.id,
        "board",
        1,
    )
    assert session_started is None
    assert isinstance(key_revoked, ApiKeyRevoked)
    assert key_revoked.company_id == company.id
    assert key_revoked.aggregate_version == 2
    # No key and no hash in anything published.
    for event in published:
        wire = msgspec.json.encode(event)
        assert key.encode() not in wire
        assert record.key_hash.encode() not in wire
    # Every event decodes in the public union, and ids are stable across republication.
    for event in filter(None, published):
        assert msgspec.json.decode(msgspec.json.encode(event), type=AnyEvent) == event
    again = [to_contract(e) for e in _stored(app)]
    assert [e.event_id for e in filter(None, again)] == [
        e.event_id for e in filter(None, published)
    ]


def test_events_without_a_cause_name_the_gateway(app: GatewayApplication) -> None:
    app.create_company("Acme")
    (event,) = [to_contract(e) for e in _stored(app)]
    assert event is not None
    assert event.actor == Actor(type="system", id="api-gateway")
