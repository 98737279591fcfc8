"""The gateway's stored secrets (key, session and CSRF hashes) never leave it through audit or replay."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from api_gateway.application import GatewayApplication
from api_gateway.domain import Session, hash_secret
from api_gateway.usecases.sessions import SessionStarted
from eventstore import audit_trail, verify_replay
from eventstore.privacy import REDACTED


@pytest.fixture
def app() -> Iterator[GatewayApplication]:
    application = GatewayApplication(service="gateway")
    yield application
    application.close()


def _signed_in(app: GatewayApplication) -> tuple[str, str, SessionStarted]:
    company = app.create_company("Acme")
    record, key = app.create_api_key(company.id, "ci", "board")
    return record.id, key, app.start_session(key, ttl=3600)


def _secrets(key: str, started: SessionStarted) -> list[str]:
    clear = [key, started.session_id, started.csrf_token]
    return clear + [hash_secret(secret) for secret in clear]


def test_audit_of_keys_and_sessions_shows_no_hash(app: GatewayApplication) -> None:
    key_id, key, started = _signed_in(app)
    session_id = str(Session.create_id(hash_secret(started.session_id)))

    key_trail = audit_trail(app, key_id)
    session_trail = audit_trail(app, session_id)

    assert key_trail.events[0].data == {
        "company_id": key_trail.events[0].data["company_id"],
        "name": "ci",
        "kind": "board",
        "agent_id": None,
    }
    assert set(session_trail.events[0].data) == {"company_id", "key_id", "expires_at"}
    shown = repr(key_trail) + repr(session_trail)
    assert [secret for secret in _secrets(key, started) if secret in shown] == []


def test_replay_differences_locate_drift_without_hashes(app: GatewayApplication) -> None:
    key_id, key, started = _signed_in(app)
    session_id = str(Session.create_id(hash_secret(started.session_id)))
    # The live read models drift where the hashes are.
    del app.keys_by_hash[hash_secret(key)]
    app.sessions[session_id] = type(app.sessions[session_id])(
        **{**vars(app.sessions[session_id]), "csrf_hash": hash_secret("forged")}
    )

    report = verify_replay(GatewayApplication(service="gateway"), app)

    assert not report.ok
    text = "\n".join(report.differences)
    assert f"keys_by_hash[{REDACTED}]: only in rebuilt: '{key_id}'" in text
    assert f"sessions['{session_id}']['csrf_hash']: live and rebuilt differ" in text
    leaked = [s for s in [*_secrets(key, started), hash_secret("forged")] if s in text]
    assert leaked == []
