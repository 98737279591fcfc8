"""Stored events become public contracts without any ciphertext."""

from __future__ import annotations

import msgspec
from secrets_helpers import memory_app, new_key, ring, stored_ciphertexts, stored_events

from contracts.base import Actor
from contracts.credential_events import (
    CredentialResolved,
    SecretCreated,
    SecretDeleted,
    SecretRotated,
)
from contracts.events import AnyEvent
from eventstore import Cause, acting
from git_credentials.publishing import to_contract
from git_credentials.usecases.resolver import ResolutionRecord

CANARY = "ghp_CANARY_publishing_77aa"


def test_every_stored_event_is_published_without_value_or_ciphertext() -> None:
    app = memory_app(ring(new_key()))
    board = Cause(actor=Actor(type="board", id="key-1"), reason="create secret")
    with acting(board):
        record = app.create_secret("c-1", "GH_TOKEN", CANARY)
        app.rotate_secret(record.id, CANARY + "2", scope="c-1")
    ciphertexts = stored_ciphertexts(app, record.id)
    app.delete_secret(record.id, scope="c-1")
    with acting(Cause(actor=Actor(type="system", id="git-credentials"), run_id="run-9")):
        app.record_resolution(
            ResolutionRecord(
                company_id="c-1",
                provider="github",
                remote_host="github.com",
                secret_name="GH_TOKEN",
                source="company_secret",
                run_id=None,
                operation_id=None,
            )
        )
    published = [to_contract(e) for e in stored_events(app)]
    created, rotated, deleted, resolved = published
    assert isinstance(created, SecretCreated)
    assert (created.name, created.version, created.company_id) == ("GH_TOKEN", 1, "c-1")
    assert (created.aggregate, created.aggregate_id) == ("secret", record.id)
    assert created.actor == Actor(type="board", id="key-1")
    assert created.reason == "create secret"
    assert isinstance(rotated, SecretRotated)
    assert (rotated.name, rotated.version) == ("GH_TOKEN", 2)
    assert isinstance(deleted, SecretDeleted)
    assert (deleted.name, deleted.versions_destroyed) == ("GH_TOKEN", 2)
    assert deleted.actor == Actor(type="system", id="git-credentials")  # no cause: the service
    assert isinstance(resolved, CredentialResolved)
    assert (resolved.aggregate, resolved.run_id, resolved.company_id) == (
        "credential",
        "run-9",
        "c-1",
    )
    assert (resolved.secret_name, resolved.source, resolved.provider, resolved.remote_host) == (
        "GH_TOKEN",
        "company_secret",
        "github",
        "github.com",
    )
    # On the wire: decodable as the public union, and nothing secret.
    wire = b"".join(msgspec.json.encode(event) for event in published)
    decoded = [msgspec.json.decode(msgspec.json.encode(e), type=AnyEvent) for e in published]
    assert decoded == published
    assert CANARY.encode() not in wire
    assert b"ciphertext" not in wire
    assert not any(c.encode() in wire for c in ciphertexts)


def test_other_events_stay_private() -> None:
    assert to_contract(object()) is None
