"""Starts over the SQLite store and vault: shredding left-over keys, master-key rotation, a wrong
master key, and the read models rebuilt without any key."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from secrets_helpers import new_key, ring, sqlite_app, started, vault_rows

from git_credentials.adapters.vault import vault_path
from git_credentials.domain import VaultError
from git_credentials.domain.chain import SecretUnavailable

CANARY = "glpat_CANARY_restart_51c0"


def test_keys_left_by_a_crash_after_the_deletion_are_destroyed_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = ring(new_key())
    app, vault, start = started(tmp_path, keys)
    doomed = app.create_secret("c-1", "GITLAB_TOKEN", CANARY)
    app.rotate_secret(doomed.id, CANARY + "-2", scope="c-1")
    kept = app.create_secret("c-1", "GH_TOKEN", "kept")

    # The vault fails right after the deletion was saved (as a crash between the two would).
    def broken(secret_id: str) -> int:
        raise OSError("disk gone")

    monkeypatch.setattr(vault, "destroy", broken)
    with pytest.raises(VaultError, match="destroyed at the service's next start"):
        app.delete_secret(doomed.id, scope="c-1")
    monkeypatch.undo()
    assert {r[0] for r in vault_rows(vault_path(tmp_path))} == {doomed.id, kept.id}
    app.close()
    vault.close()
    # The next start destroys them; the live secret keeps its key.
    app, vault, start = started(tmp_path, keys)
    assert start.shredded == 2  # both versions' keys
    assert {r[0] for r in vault_rows(vault_path(tmp_path))} == {kept.id}
    assert app.secret_value("c-1", "GITLAB_TOKEN") is None
    assert app.secret_value("c-1", "GH_TOKEN") == "kept"
    # And a start with nothing to destroy destroys nothing.
    app.close()
    vault.close()
    app, vault, start = started(tmp_path, keys)
    assert start.shredded == 0
    assert {r[0] for r in vault_rows(vault_path(tmp_path))} == {kept.id}


def test_rotating_the_master_key_rewraps_every_row_and_keeps_values_readable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old, new = new_key(), new_key()
    app, vault, start = started(tmp_path, ring(old))
    first = app.create_secret("c-1", "GH_TOKEN", CANARY + "-a")
    app.rotate_secret(first.id, CANARY + "-b", scope="c-1")
    app.create_secret("c-2", "GITLAB_TOKEN", CANARY + "-c")
    before = vault_rows(vault_path(tmp_path))
    app.close()
    vault.close()
    # Start with the new key and the old one as previous: every row is rewrapped (a count logged).
    caplog.set_level("INFO", logger="git_credentials.usecases.vault")
    app, vault, start = started(tmp_path, ring(new, old))
    assert (start.rewrapped, start.unreadable) == (3, 0)
    assert [r.__dict__.get("rewrapped") for r in caplog.records if r.msg == "key vault open"] == [3]
    after = vault_rows(vault_path(tmp_path))
    assert {r[2] for r in after} == {ring(new).current.id}
    raw = vault_path(tmp_path).read_bytes()
    assert not any(row[3] in raw for row in before)  # no old wrapping left in the file
    assert app.secret_value("c-1", "GH_TOKEN") == CANARY + "-b"
    assert app.secret_value("c-2", "GITLAB_TOKEN") == CANARY + "-c"
    app.close()
    vault.close()
    # Later starts need only the new key.
    app, vault, start = started(tmp_path, ring(new))
    assert app.secret_value("c-1", "GH_TOKEN") == CANARY + "-b"
    assert CANARY not in caplog.text


def test_a_wrong_master_key_makes_values_unavailable_until_the_right_one_is_given(
    tmp_path: Path,
) -> None:
    right, wrong = new_key(), new_key()
    app, vault, start = started(tmp_path, ring(right))
    app.create_secret("c-1", "GH_TOKEN", CANARY)
    app.close()
    vault.close()
    # Started with a wrong key: it starts, nothing is rewrapped, the value is unavailable.
    app, vault, start = started(tmp_path, ring(wrong))
    assert (start.unreadable, start.rewrapped) == (1, 0)
    with pytest.raises(SecretUnavailable) as caught:
        app.secret_value("c-1", "GH_TOKEN")
    assert CANARY not in str(caught.value)
    # New secrets work meanwhile (under the key it has).
    app.create_secret("c-1", "GITHUB_TOKEN", "new-one")
    assert app.secret_value("c-1", "GITHUB_TOKEN") == "new-one"
    app.close()
    vault.close()
    # Given the right key as a previous one, the old rows are rewrapped and readable again.
    app, vault, start = started(tmp_path, ring(wrong, right))
    assert (start.rewrapped, start.unreadable) == (1, 0)
    assert app.secret_value("c-1", "GH_TOKEN") == CANARY
    assert app.secret_value("c-1", "GITHUB_TOKEN") == "new-one"


def test_the_read_models_rebuild_from_the_store_alone(tmp_path: Path) -> None:
    app = started(tmp_path, ring(new_key())).app
    record = app.create_secret("c-1", "GH_TOKEN", CANARY)
    app.rotate_secret(record.id, CANARY + "2", scope="c-1")
    app.create_secret("c-1", "OTHER", "x")
    app.delete_secret(app.create_secret("c-2", "GONE", "y").id, scope=None)
    live = msgspec.to_builtins(app.read_models(), enc_hook=str)
    # A fresh instance over the same store, no vault, no key: the same read models.
    fresh = sqlite_app(tmp_path)
    assert fresh.sealer is None
    assert msgspec.to_builtins(fresh.read_models(), enc_hook=str) == live
    assert CANARY not in repr(live)
