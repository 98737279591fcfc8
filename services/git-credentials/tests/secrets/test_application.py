"""The use cases on the memory store: create, rotate, delete, list, values, access events."""

from __future__ import annotations

import base64

import msgspec
import pytest
from secrets_helpers import memory_app, new_key, ring, stored_ciphertexts, stored_events

from contracts.base import Actor
from eventstore import Cause, acting, audit_trail
from git_credentials.adapters.vault import MemoryVault
from git_credentials.application import GitCredentialsApplication
from git_credentials.domain import (
    InvalidSecretError,
    SecretNameTakenError,
    SecretNotFoundError,
    VaultError,
)
from git_credentials.domain.chain import SecretUnavailable
from git_credentials.usecases.resolver import ResolutionRecord

CANARY = "ghp_CANARY_application_9d1e"


@pytest.fixture
def vault() -> MemoryVault:
    return MemoryVault()


@pytest.fixture
def app(vault: MemoryVault) -> GitCredentialsApplication:
    return memory_app(ring(new_key()), vault)


def _raw_store(app: GitCredentialsApplication) -> bytes:
    """Every stored event as the recorder holds it (serialized state)."""
    notifications = app.recorder.select_notifications(start=1, limit=100_000)
    return b"".join(n.state for n in notifications)


def test_create_rotate_and_read_a_secret(
    app: GitCredentialsApplication, vault: MemoryVault
) -> None:
    # Created: version 1, listed, its value readable by exact name.
    record = app.create_secret("c-1", "GH_TOKEN", CANARY + "-v1")
    assert (record.company_id, record.name, record.version) == ("c-1", "GH_TOKEN", 1)
    assert record.created_at == record.updated_at
    assert app.secret_value("c-1", "GH_TOKEN") == CANARY + "-v1"
    assert app.secret_value("c-1", "gh_token") is None  # exact names only
    assert app.secret_value("c-2", "GH_TOKEN") is None  # another company's
    # Rotated: version 2 is what is read now.
    rotated = app.rotate_secret(record.id, CANARY + "-v2", scope="c-1")
    assert rotated.version == 2
    assert rotated.created_at == record.created_at < rotated.updated_at
    assert app.secret_value("c-1", "GH_TOKEN") == CANARY + "-v2"
    # One data key per version, each wrapped by the current master key.
    assert sorted(vault.rows) == [(record.id, 1), (record.id, 2)]
    assert len({row.wrapped for row in vault.rows.values()}) == 2
    # The store holds the two ciphertexts and never the value.
    raw = _raw_store(app)
    assert CANARY.encode() not in raw
    ciphertexts = stored_ciphertexts(app, record.id)
    assert len(ciphertexts) == 2
    assert all(c.encode() in raw for c in ciphertexts)
    assert all(CANARY.encode() not in base64.b64decode(c) for c in ciphertexts)


def test_a_taken_name_is_a_conflict_that_says_to_rotate(app: GitCredentialsApplication) -> None:
    record = app.create_secret("c-1", "GITLAB_TOKEN", "one")
    with pytest.raises(SecretNameTakenError) as caught:
        app.create_secret("c-1", "GITLAB_TOKEN", "two")
    assert (caught.value.code, caught.value.status) == ("state_conflict", 409)
    assert f"PUT /api/secrets/{record.id}" in str(caught.value)
    assert "two" not in str(caught.value)
    # Another company may use the name; the first value is unchanged.
    app.create_secret("c-2", "GITLAB_TOKEN", "three")
    assert app.secret_value("c-1", "GITLAB_TOKEN") == "one"
    with pytest.raises(InvalidSecretError):
        app.create_secret("c-1", "BAD-NAME", "x")


def test_secrets_of_another_company_are_not_found(app: GitCredentialsApplication) -> None:
    record = app.create_secret("c-1", "GH_TOKEN", "v1")
    for call in (
        lambda: app.rotate_secret(record.id, "v2", scope="c-2"),
        lambda: app.delete_secret(record.id, scope="c-2"),
        lambda: app.rotate_secret("no-such-id", "v2", scope="c-1"),
        lambda: app.delete_secret("no-such-id", scope=None),
    ):
        with pytest.raises(SecretNotFoundError) as caught:
            call()
        assert caught.value.status == 404
    # An admin (no scope) reaches it.
    assert app.rotate_secret(record.id, "v2", scope=None).version == 2


def test_delete_destroys_every_data_key_and_frees_the_name(
    app: GitCredentialsApplication, vault: MemoryVault
) -> None:
    doomed = app.create_secret("c-1", "GH_TOKEN", CANARY + "-1")
    app.rotate_secret(doomed.id, CANARY + "-2", scope="c-1")
    kept = app.create_secret("c-1", "GITHUB_TOKEN", "kept-value")
    # Deleted: two keys destroyed, the kept secret's key stays.
    assert app.delete_secret(doomed.id, scope="c-1") == 2
    assert sorted(vault.rows) == [(kept.id, 1)]
    assert app.secret_value("c-1", "GH_TOKEN") is None
    rows, total = app.list_secrets("c-1", 50, 0)
    assert ([r.name for r in rows], total) == (["GITHUB_TOKEN"], 1)
    # A deleted secret is gone for every use case.
    with pytest.raises(SecretNotFoundError):
        app.rotate_secret(doomed.id, "again", scope="c-1")
    with pytest.raises(SecretNotFoundError):
        app.delete_secret(doomed.id, scope="c-1")
    # The name is free again: a new secret with its own id and version 1.
    again = app.create_secret("c-1", "GH_TOKEN", "new")
    assert again.id != doomed.id
    assert again.version == 1
    assert app.secret_value("c-1", "GH_TOKEN") == "new"
    # The deletion is in the read models, for the start-time shredding.
    assert doomed.id in app.deleted_secrets


def test_lists_are_by_name_and_paged(app: GitCredentialsApplication) -> None:
    for name in ("ZED", "ALPHA", "MIDDLE"):
        app.create_secret("c-1", name, "v")
    app.create_secret("c-2", "OTHER", "v")
    rows, total = app.list_secrets("c-1", 2, 0)
    assert ([r.name for r in rows], total) == (["ALPHA", "MIDDLE"], 3)
    rows, total = app.list_secrets("c-1", 2, 2)
    assert ([r.name for r in rows], total) == (["ZED"], 3)
    assert app.list_secrets("c-3", 50, 0) == ([], 0)


def test_a_failed_save_leaves_no_key_behind(
    app: GitCredentialsApplication, vault: MemoryVault
) -> None:
    def refuse(_event: object) -> None:
        raise RuntimeError("the save failed")

    app.publication_check = refuse
    with pytest.raises(RuntimeError, match="the save failed"):
        app.create_secret("c-1", "GH_TOKEN", CANARY)
    assert vault.rows == {}
    assert app.list_secrets("c-1", 50, 0) == ([], 0)


def test_a_value_that_does_not_decrypt_is_unavailable_not_a_crash(
    app: GitCredentialsApplication, vault: MemoryVault
) -> None:
    record = app.create_secret("c-1", "GH_TOKEN", CANARY)
    # The data key vanished (the vault lost a row): unavailable, saying nothing secret.
    del vault.rows[(record.id, 1)]
    with pytest.raises(SecretUnavailable) as caught:
        app.secret_value("c-1", "GH_TOKEN")
    assert "GH_TOKEN" in str(caught.value)
    assert CANARY not in str(caught.value)
    # An instance whose vault is not open (a replay's) seals nothing.
    bare = GitCredentialsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    with pytest.raises(VaultError):
        bare.create_secret("c-1", "OTHER", "v")


def test_resolutions_are_access_events_newest_first(app: GitCredentialsApplication) -> None:
    def record(host: str, run_id: str | None = None, company: str = "c-1") -> ResolutionRecord:
        return ResolutionRecord(
            company_id=company,
            provider="github",
            remote_host=host,
            secret_name="GH_TOKEN",
            source="company_secret",
            run_id=run_id,
            operation_id=None if run_id else "op-1",
        )

    cause = Cause(actor=Actor(type="system", id="git-credentials"), run_id="run-of-cause")
    with acting(cause):
        first = app.record_resolution(record("github.com"))  # run from the cause
        app.record_resolution(record("www.github.com", run_id="run-given"))
    app.record_resolution(record("gitlab.example", company="c-2"))
    assert first.run_id == "run-of-cause"
    rows, total = app.access_events("c-1", 50, 0)
    assert total == 2
    assert [(r.remote_host, r.run_id) for r in rows] == [
        ("www.github.com", "run-given"),
        ("github.com", "run-of-cause"),
    ]
    assert app.access_events("c-1", 1, 1)[0][0].remote_host == "github.com"
    assert app.access_events("c-3", 50, 0) == ([], 0)
    # The stored event carries the run (the published envelope's runId).
    resolved = [e for e in stored_events(app) if type(e).__name__ == "Resolved"]
    assert [e.run_id for e in resolved] == ["run-of-cause", "run-given", None]


def test_audit_rows_and_read_models_hold_no_ciphertext(app: GitCredentialsApplication) -> None:
    record = app.create_secret("c-1", "GH_TOKEN", CANARY)
    app.rotate_secret(record.id, CANARY + "2", scope="c-1")
    ciphertexts = stored_ciphertexts(app, record.id)
    trail = audit_trail(app, record.id)
    shown = msgspec.json.encode(trail) + msgspec.json.encode(
        msgspec.to_builtins(app.read_models(), enc_hook=str)
    )
    assert trail.total == 2
    assert b"ciphertext" not in shown
    assert not any(c.encode() in shown for c in ciphertexts)
    assert CANARY.encode() not in shown
