"""$CLIPYARD_HOME secrets: NATS passwords and the admin key, private from their first byte."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from clipyard_cli.home import (
    NATS_USERS,
    HomeError,
    admin_key_path,
    ensure_admin_key,
    ensure_passwords,
    generate_secret,
    load_passwords,
    password_env_var,
    passwords_path,
    resolve_home,
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_home_defaults_to_dot_clipyard_and_is_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_home({}) == tmp_path / ".clipyard"
    monkeypatch.chdir(tmp_path)
    # A relative CLIPYARD_HOME is resolved against the current folder.
    assert resolve_home({"CLIPYARD_HOME": "stack"}) == tmp_path / "stack"
    assert resolve_home({"CLIPYARD_HOME": "~/x"}) == tmp_path / "x"


def test_passwords_are_generated_once_for_every_user_with_mode_0600(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # First start: the file is created, private, with one distinct password per user.
    first = ensure_passwords(home)
    path = passwords_path(home)
    assert sorted(first) == sorted(NATS_USERS)
    assert len(set(first.values())) == len(NATS_USERS)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert json.loads(path.read_text()) == first
    # Second start: the same passwords.
    assert ensure_passwords(home) == first
    assert load_passwords(home) == first


def test_a_user_missing_from_the_file_gets_a_password_and_the_others_stay(tmp_path: Path) -> None:
    first = ensure_passwords(tmp_path)
    path = passwords_path(tmp_path)
    partial = {k: v for k, v in first.items() if k != "cli"}
    path.write_text(json.dumps(partial))
    path.chmod(0o644)
    again = ensure_passwords(tmp_path)
    assert {k: again[k] for k in partial} == partial
    assert again["cli"]
    assert again["cli"] != first["cli"]
    assert mode(path) == 0o600


def test_a_loose_password_file_is_made_private_again(tmp_path: Path) -> None:
    ensure_passwords(tmp_path)
    passwords_path(tmp_path).chmod(0o644)
    load_passwords(tmp_path)
    assert mode(passwords_path(tmp_path)) == 0o600


def test_a_broken_password_file_is_reported_not_overwritten(tmp_path: Path) -> None:
    path = passwords_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(HomeError, match="not readable JSON"):
        ensure_passwords(tmp_path)
    assert path.read_text() == "{not json"


def test_loading_passwords_before_the_first_start_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(HomeError, match="clipyard up"):
        load_passwords(tmp_path)


def test_the_admin_key_comes_from_the_environment_without_a_file(tmp_path: Path) -> None:
    assert ensure_admin_key(tmp_path, {"CLIPYARD_ADMIN_KEY": "given-key"}) == "given-key"
    assert not admin_key_path(tmp_path).exists()


def test_the_admin_key_file_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = ensure_admin_key(home, {})
    path = admin_key_path(home)
    assert mode(path) == 0o600
    assert path.read_text().strip() == key
    assert key.startswith("cy_admin_")
    assert len(key) > 40
    assert ensure_admin_key(home, {}) == key
    # The home the key file made is private.
    assert mode(home) == 0o700


def test_an_empty_admin_key_file_is_replaced(tmp_path: Path) -> None:
    path = admin_key_path(tmp_path)
    path.write_text("\n")
    key = ensure_admin_key(tmp_path, {"CLIPYARD_ADMIN_KEY": ""})
    assert key
    assert path.read_text().strip() == key


def test_secrets_are_strings_to_nats_and_unique() -> None:
    values = {generate_secret() for _ in range(100)}
    assert len(values) == 100
    for value in values:
        # NATS reads an environment value as a config value: it must not look like a number.
        assert value[0].isalpha()
        assert value.isalnum()


def test_password_variables_match_the_nats_config() -> None:
    config = (Path(__file__).resolve().parents[3] / "deploy" / "nats" / "nats.conf").read_text()
    for user in NATS_USERS:
        assert f"password: ${password_env_var(user)}\n" in config
