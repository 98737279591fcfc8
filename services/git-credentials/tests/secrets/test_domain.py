"""The Secret and CredentialResolution aggregates: what their events hold, what they refuse."""

# Event classes made by eventsourcing's ``@event`` decorator are invisible to mypy.
# mypy: disable-error-code=attr-defined

from __future__ import annotations

import dataclasses
from typing import Any
from uuid import uuid4

import pytest

from contracts.base import Actor
from eventstore import Cause, acting
from git_credentials.domain import (
    CredentialResolution,
    InvalidSecretError,
    Secret,
    SecretNotFoundError,
    check_secret_name,
)


def test_a_secret_keeps_one_ciphertext_per_version_and_forgets_them_when_deleted() -> None:
    secret_id = uuid4()
    # Created with its first version, under the id its ciphertext was sealed for.
    secret = Secret.create(secret_id=secret_id, company_id="c-1", name="GH_TOKEN", ciphertext="ct1")
    assert secret.id == secret_id
    assert (secret.company_id, secret.name, secret.latest, secret.next_version) == (
        "c-1",
        "GH_TOKEN",
        1,
        2,
    )
    # Rotated: version 2, both ciphertexts kept.
    secret.rotate(2, "ct2")
    assert secret.latest == 2
    assert [secret.ciphertext_of(1), secret.ciphertext_of(2)] == ["ct1", "ct2"]
    # A version out of order is a caller's bug.
    with pytest.raises(ValueError, match="not the next one"):
        secret.rotate(4, "ct4")
    # Deleted: no ciphertext left in the state; the event counts the versions.
    secret.delete()
    assert secret.deleted
    assert secret.ciphertexts == []
    created, rotated, deleted = secret.collect_events()
    assert isinstance(created, Secret.Created)
    assert isinstance(rotated, Secret.Rotated)
    assert (rotated.version, rotated.ciphertext, rotated.name) == (2, "ct2", "GH_TOKEN")
    assert isinstance(deleted, Secret.Deleted)
    assert (deleted.versions_destroyed, deleted.name, deleted.company_id) == (2, "GH_TOKEN", "c-1")
    # A deleted secret is not found for a rotation or a second delete.
    with pytest.raises(SecretNotFoundError):
        secret.rotate(3, "ct3")
    with pytest.raises(SecretNotFoundError):
        secret.delete()


def test_secret_events_have_no_field_for_a_value() -> None:
    for event_class in (Secret.Created, Secret.Rotated, Secret.Deleted):
        names = {f.name for f in dataclasses.fields(event_class)}
        assert not names & {"value", "plaintext", "data_key", "key"}


@pytest.mark.parametrize("name", ["", "1TOKEN", "GH-TOKEN", "gh token", "X" * 129, "TÖKEN"])
def test_a_bad_name_is_refused(name: str) -> None:
    with pytest.raises(InvalidSecretError) as caught:
        Secret.create(secret_id=uuid4(), company_id="c", name=name, ciphertext="ct")
    assert caught.value.code == "validation_failed"
    assert caught.value.details == {"field": "name"}


def test_names_are_exact_identifiers() -> None:
    for name in ("GITHUB_TOKEN", "gh_token", "_X", "A" * 128):
        assert check_secret_name(name) == name


def test_a_resolution_records_the_run_it_was_given_over_the_cause() -> None:
    cause = Cause(actor=Actor(type="system", id="git-credentials"), run_id="run-from-cause")
    facts: dict[str, Any] = {
        "company_id": "c-1",
        "secret_name": "GH_TOKEN",
        "source": "company_secret",
        "provider": "github",
        "remote_host": "github.com",
        "operation_id": None,
    }
    with acting(cause):
        given = CredentialResolution(**facts, run_id="run-given")
        (event,) = given.collect_events()
    assert event.run_id == "run-given"
    assert (event.secret_name, event.source, event.provider, event.remote_host) == (
        "GH_TOKEN",
        "company_secret",
        "github",
        "github.com",
    )
    assert event.actor == {"type": "system", "id": "git-credentials"}
    assert given.run_id == "run-given"
