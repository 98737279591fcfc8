# mypy: disable-error-code="attr-defined"
# (event classes made by eventsourcing's @event, and their fields, are invisible to mypy)
"""Audit trails and replay reports never show secret material (ARCHITECTURE §2)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any, ClassVar
from uuid import UUID

import pytest
from eventsourcing.domain import event

from contracts.service import StoredEvent
from eventstore import ClipyardAggregate, ServiceApplication, audit_trail, stored_event_view
from eventstore.privacy import DEFAULT_PRIVATE_FIELDS, REDACTED, PrivacyPolicy, privacy_of
from eventstore.replay import compare_read_models, replay_to, snapshot_read_models, verify_replay

KEY_HASH = hashlib.sha256(b"cy_board_the-clear-key").hexdigest()
OTHER_HASH = hashlib.sha256(b"cy_board_another-key").hexdigest()


class Credential(ClipyardAggregate):
    """An aggregate whose events hold every kind of secret material."""

    @event("Stored")
    def __init__(
        self,
        name: str,
        key_hash: str,
        ciphertext: str,
        client_secret_ref: str,
        token: str,
        extra: dict[str, Any],
    ) -> None:
        self.name = name
        self.key_hash = key_hash

    @event("Renamed")
    def rename(self, name: str, key: str) -> None:
        self.name = name


class Vault(ServiceApplication):
    """Credentials by id, and credential ids by key hash (a read model keyed by secrets)."""

    def init_read_models(self) -> None:
        self.credentials: dict[str, dict[str, Any]] = {}
        self.ids_by_hash: dict[str, str] = {}

    def project(self, domain_event: Any) -> None:
        key = str(domain_event.originator_id)
        if isinstance(domain_event, Credential.Stored):
            self.credentials[key] = {"name": domain_event.name, "key_hash": domain_event.key_hash}
            self.ids_by_hash[domain_event.key_hash] = key
        elif isinstance(domain_event, Credential.Renamed):
            self.credentials[key]["name"] = domain_event.name

    def read_models(self) -> dict[str, Any]:
        return {"credentials": self.credentials, "ids_by_hash": self.ids_by_hash}

    def store(self, name: str, key_hash: str) -> UUID:
        credential = Credential(
            name=name,
            key_hash=key_hash,
            ciphertext="gAAAA-sealed",
            client_secret_ref="vault://x",
            token="tok-123",
            extra={"note": "kept", "password": "hunter2", KEY_HASH: "by-digest"},
        )
        self.save(credential)
        return credential.id


@pytest.fixture
def vault() -> Iterator[Vault]:
    app = Vault(service="credentials")
    yield app
    app.close()


def _secrets_in(text: str) -> list[str]:
    secrets = [KEY_HASH, OTHER_HASH, "gAAAA-sealed", "vault://x", "tok-123", "hunter2", "k-clear"]
    return [secret for secret in secrets if secret in text]


def test_the_default_policy_names_hashes_ciphertext_secrets_keys_and_tokens() -> None:
    policy = PrivacyPolicy()
    for name in ("key_hash", "csrf_hash", "ciphertext", "client_secret_ref", "key", "token"):
        assert policy.is_private(name), name
    for name in ("name", "key_id", "token_count", "hashes_seen", "company_id"):
        assert not policy.is_private(name), name
    assert privacy_of(object()).patterns == DEFAULT_PRIVATE_FIELDS


def test_audit_rows_drop_private_fields(vault: Vault) -> None:
    credential_id = vault.store("deploy", KEY_HASH)
    credential: Credential = vault.repository.get(credential_id)
    credential.rename("deploy-2", key="k-clear")
    vault.save(credential)

    trail = audit_trail(vault, str(credential_id))

    stored, renamed = trail.events
    assert stored.data == {
        "name": "deploy",
        "extra": {"note": "kept", f"{REDACTED} 1": "by-digest"},
    }
    assert renamed.data == {"name": "deploy-2"}
    assert _secrets_in(repr(trail)) == []


def test_an_application_declares_its_own_private_fields_and_audit_view(vault: Vault) -> None:
    class Strict(Vault):
        private_fields: ClassVar[tuple[str, ...]] = (*DEFAULT_PRIVATE_FIELDS, "name")

        def audit_view(self, domain_event: Any) -> StoredEvent:
            row = stored_event_view(domain_event)
            # A view that (wrongly) puts a secret back: private fields are dropped all the same.
            return StoredEvent(
                aggregate_id=row.aggregate_id,
                aggregate_version=row.aggregate_version,
                type="credential.kept.v1",
                occurred_at=row.occurred_at,
                data={**row.data, "key_hash": KEY_HASH, "shown": True},
            )

    strict = Strict(service="credentials")
    try:
        credential_id = strict.store("deploy", KEY_HASH)
        (row,) = audit_trail(strict, credential_id).events
        assert row.type == "credential.kept.v1"
        # What the view leaves out is filled in: the label of its type, the stored class.
        assert (row.label, row.stored_type) == ("Credential kept", "Credential.Stored")
        assert "name" not in row.data
        assert row.data["shown"] is True
        assert _secrets_in(repr(row)) == []
    finally:
        strict.close()


def test_replay_differences_name_paths_and_ids_never_secrets(vault: Vault) -> None:
    first = str(vault.store("deploy", KEY_HASH))
    second = str(vault.store("backup", OTHER_HASH))
    fresh = Vault(service="credentials")
    try:
        assert verify_replay(fresh, vault).ok
        # The live read models drift in every way a secret could show.
        vault.credentials[first]["key_hash"] = "0" * 64
        vault.credentials[first]["name"] = "renamed"
        del vault.credentials[second]
        vault.ids_by_hash[OTHER_HASH] = first
        vault.ids_by_hash["f" * 64] = second
        report = verify_replay(Vault(service="credentials"), vault)
    finally:
        fresh.close()

    assert not report.ok
    text = "\n".join(report.differences)
    assert _secrets_in(text) == []
    assert "0" * 64 not in text
    assert "f" * 64 not in text
    assert f"credentials['{first}']['key_hash']: live and rebuilt differ (private value)" in text
    assert f"credentials['{first}']['name']: live='renamed' rebuilt='deploy'" in text
    assert f"credentials['{second}']: only in rebuilt: {{'key_hash': '{REDACTED}', " in text
    # Keyed by hashes: the key is hidden, the aggregate ids locate the difference.
    assert f"ids_by_hash[{REDACTED}]: live='{first}' rebuilt='{second}'" in text
    assert f"ids_by_hash[{REDACTED}]: only in live: '{second}'" in text


def test_the_rebuild_stops_at_the_live_snapshot(vault: Vault) -> None:
    vault.store("deploy", KEY_HASH)
    live = snapshot_read_models(vault)
    # Saved after the snapshot: the fresh instance must not count it.
    vault.store("later", OTHER_HASH)
    fresh = Vault(service="credentials")
    try:
        fresh.rebuild_read_models(source=fresh.recorder)  # its own (empty) in-memory store
        replay_to(fresh, live.projected_upto, vault.recorder)
        report = compare_read_models(live, fresh)
    finally:
        fresh.close()
    assert report.ok, report.differences
    assert fresh.projected_upto == live.projected_upto == 1
