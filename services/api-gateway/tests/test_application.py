"""Use cases and read models of the gateway application, on the in-memory store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import pytest

from api_gateway.application import GatewayApplication
from api_gateway.domain import (
    ApiKeyNotFoundError,
    Company,
    CompanyNotFoundError,
    KeyKindNotAllowedError,
    Session,
    UnauthenticatedError,
    hash_secret,
)
from contracts.base import Actor
from eventstore import Cause, StoreSettings, acting, build_application


@pytest.fixture
def app() -> Iterator[GatewayApplication]:
    application = GatewayApplication(service="gateway")
    yield application
    application.close()


def test_company_then_board_key_then_revocation(app: GatewayApplication) -> None:
    # An admin creates a company; the read model has it at once.
    with acting(Cause(actor=Actor(type="admin", id="admin"))):
        company = app.create_company("Acme Corp")
    assert app.company(company.id) == company
    assert company.issue_prefix == "ACME"
    # A board key is issued; only its hash is kept, and it authenticates.
    record, key = app.create_api_key(company.id, "ci", "board")
    assert key.startswith("cy_board_")
    assert record.key_hash != key
    assert app.authenticate_key(key) == record
    # Revoked, it no longer authenticates, with a message that says so.
    app.revoke_api_key(record.id)
    with pytest.raises(UnauthenticatedError, match="revoked"):
        app.authenticate_key(key)
    # Revoking again records nothing.
    before = app.last_notification_id()
    app.revoke_api_key(record.id)
    assert app.last_notification_id() == before


def test_events_record_the_acting_principal(app: GatewayApplication) -> None:
    with acting(Cause(actor=Actor(type="admin", id="admin"))):
        company = app.create_company("Acme")
    (created,) = app.repository.event_store.get(UUID(company.id))
    assert isinstance(created, Company.Created)
    assert created.actor == {"type": "admin", "id": "admin"}


def test_unknown_things_are_not_found(app: GatewayApplication) -> None:
    with pytest.raises(CompanyNotFoundError):
        app.company("nope")
    with pytest.raises(CompanyNotFoundError):
        app.create_api_key("nope", "ci", "board")
    with pytest.raises(ApiKeyNotFoundError):
        app.revoke_api_key("nope")
    with pytest.raises(UnauthenticatedError, match="not known"):
        app.authenticate_key("cy_board_nothing")
    assert app.last_notification_id() == 0


def test_agent_keys_name_their_agent(app: GatewayApplication) -> None:
    company = app.create_company("Acme")
    with pytest.raises(KeyKindNotAllowedError, match="agentId"):
        app.create_api_key(company.id, "bot", "agent", None)
    assert app.last_notification_id() == 1
    record, key = app.create_api_key(company.id, "bot", "agent", "agent-1")
    assert (record.kind, record.agent_id) == ("agent", "agent-1")
    assert app.authenticate_key(key) == record


def test_sessions_start_expire_and_end(app: GatewayApplication) -> None:
    company = app.create_company("Acme")
    record, key = app.create_api_key(company.id, "board", "board")
    # Signing in yields a session id and a CSRF token; the store holds their hashes only.
    started = app.start_session(key, ttl=60)
    session, session_key = app.authenticate_session(started.session_id)
    assert session_key == record
    assert started.session_id not in repr(app.read_models())
    assert app.csrf_matches(session, started.csrf_token)
    assert not app.csrf_matches(session, "wrong")
    assert not app.csrf_matches(session, None)
    # An expired session does not authenticate.
    expired = app.start_session(key, ttl=1e-6)
    with pytest.raises(UnauthenticatedError, match="expired"):
        app.authenticate_session(expired.session_id)
    # Signing out ends it; a second sign-out finds nothing to end.
    assert app.end_session(started.session_id) is True
    with pytest.raises(UnauthenticatedError, match="ended"):
        app.authenticate_session(started.session_id)
    assert app.end_session("not-a-session") is False


def test_a_revoked_key_ends_its_sessions(app: GatewayApplication) -> None:
    company = app.create_company("Acme")
    record, key = app.create_api_key(company.id, "board", "board")
    started = app.start_session(key, ttl=60)
    app.revoke_api_key(record.id)
    with pytest.raises(UnauthenticatedError, match="revoked"):
        app.authenticate_session(started.session_id)


def test_read_models_rebuild_identically(app: GatewayApplication) -> None:
    company = app.create_company("Acme")
    record, key = app.create_api_key(company.id, "board", "board")
    app.start_session(key, ttl=60)
    app.revoke_api_key(record.id)
    live = app.read_models()
    # Rebuilt from the notification log, the read models are the same.
    assert app.rebuild_read_models() == 4
    assert app.read_models() == live


def test_lists_page_oldest_first(app: GatewayApplication) -> None:
    ids = [app.create_company(f"Company {n}").id for n in range(5)]
    rows, total = app.list_companies(limit=2, offset=1)
    assert total == 5
    assert [r.id for r in rows] == ids[1:3]


def test_the_sqlite_store_rebuilds_the_same_read_models(tmp_path: Path) -> None:
    # Written through one instance...
    settings = StoreSettings(kind="sqlite", home=tmp_path)
    first = build_application(GatewayApplication, service="gateway", settings=settings)
    company = first.create_company("Acme")
    record, key = first.create_api_key(company.id, "board", "board")
    started = first.start_session(key, ttl=60)
    first.revoke_api_key(record.id)
    live = first.read_models()
    first.close()
    # ...and read back by a fresh one, from the file.
    second = build_application(GatewayApplication, service="gateway", settings=settings)
    try:
        assert second.read_models() == live
        assert second.sessions[started_id(started.session_id)].expires_at == started.expires_at
        with pytest.raises(UnauthenticatedError, match="revoked"):
            second.authenticate_key(key)
    finally:
        second.close()


def started_id(session_id: str) -> str:
    return str(Session.create_id(hash_secret(session_id)))
