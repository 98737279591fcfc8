"""Sessions leave the read model once they end or expire; their events stay in the store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from uuid import UUID

import pytest

from api_gateway.application import GatewayApplication
from api_gateway.domain import Session, UnauthenticatedError, hash_secret


@pytest.fixture
def app() -> Iterator[GatewayApplication]:
    application = GatewayApplication(service="gateway")
    yield application
    application.close()


@pytest.fixture
def board_key(app: GatewayApplication) -> str:
    company = app.create_company("Acme")
    _, key = app.create_api_key(company.id, "board", "board")
    return key


def _session_key(session_id: str) -> str:
    return str(Session.create_id(hash_secret(session_id)))


def _stored_events(app: GatewayApplication, session_id: str) -> int:
    return len(list(app.repository.event_store.get(UUID(_session_key(session_id)))))


def test_an_expired_session_is_dropped_on_access_and_its_events_stay(
    app: GatewayApplication, board_key: str
) -> None:
    expired = app.start_session(board_key, ttl=0.05)
    time.sleep(0.06)
    assert _session_key(expired.session_id) in app.sessions
    with pytest.raises(UnauthenticatedError, match="expired"):
        app.authenticate_session(expired.session_id)
    assert _session_key(expired.session_id) not in app.sessions
    with pytest.raises(UnauthenticatedError, match="not known or has ended"):
        app.authenticate_session(expired.session_id)
    assert _stored_events(app, expired.session_id) == 1
    # Signing out of it finds nothing to end (and records nothing).
    before = app.last_notification_id()
    assert app.end_session(expired.session_id) is False
    assert app.last_notification_id() == before


def test_signing_in_drops_every_expired_session(app: GatewayApplication, board_key: str) -> None:
    stale = [app.start_session(board_key, ttl=0.05) for _ in range(5)]
    time.sleep(0.06)
    live = app.start_session(board_key, ttl=60)
    assert set(app.sessions) == {_session_key(live.session_id)}
    assert all(_stored_events(app, one.session_id) == 1 for one in stale)


def test_an_ended_session_leaves_the_read_model(app: GatewayApplication, board_key: str) -> None:
    started = app.start_session(board_key, ttl=60)
    assert app.end_session(started.session_id) is True
    assert app.sessions == {}
    assert _stored_events(app, started.session_id) == 2
    assert app.end_session(started.session_id) is False


def test_a_rebuild_holds_live_sessions_only_and_matches_the_live_read_models(
    app: GatewayApplication, board_key: str
) -> None:
    live = app.start_session(board_key, ttl=60)
    ended = app.start_session(board_key, ttl=60)
    app.end_session(ended.session_id)
    app.start_session(board_key, ttl=0.05)  # expires, never used again
    time.sleep(0.06)
    before = app.read_models()
    assert set(before["sessions"]) == {_session_key(live.session_id)}
    app.rebuild_read_models()
    assert set(app.sessions) == {_session_key(live.session_id)}
    assert app.read_models() == before
    session, _ = app.authenticate_session(live.session_id)
    assert session.id == _session_key(live.session_id)
