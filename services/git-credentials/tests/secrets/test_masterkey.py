"""The master key: from CLIPYARD_SECRET_KEY, else a 0600 key file created on first start."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from git_credentials.adapters.crypto import master_key_id
from git_credentials.adapters.masterkey import (
    GENERATE_COMMAND,
    MasterKeyError,
    key_file_path,
    load_key_ring,
    parse_master_key,
    parse_previous_keys,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_key_is_32_bytes_of_base64_in_either_alphabet_with_or_without_padding() -> None:
    raw = bytes(range(250, 256)) + os.urandom(26)  # bytes that encode to "-"/"_" or "+"/"/"
    urlsafe = base64.urlsafe_b64encode(raw).decode()
    standard = base64.b64encode(raw).decode()
    assert parse_master_key(urlsafe, source="X") == raw
    assert parse_master_key(standard, source="X") == raw
    assert parse_master_key(f"  {urlsafe.rstrip('=')}\n", source="X") == raw


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "not a key at all!",
        base64.urlsafe_b64encode(os.urandom(16)).decode(),  # too short
        base64.urlsafe_b64encode(os.urandom(33)).decode(),  # too long
        "hunter2-hunter2-hunter2-hunter2-hunter2-hun*",  # a character outside base64
    ],
    ids=["empty", "not-base64", "too-short", "too-long", "bad-character"],
)
def test_an_invalid_key_says_how_to_generate_one_and_never_shows_itself(bad: str) -> None:
    with pytest.raises(MasterKeyError) as caught:
        parse_master_key(bad, source="CLIPYARD_SECRET_KEY")
    message = str(caught.value)
    assert "CLIPYARD_SECRET_KEY" in message
    assert GENERATE_COMMAND in message
    if bad:
        assert bad not in message


def test_the_generate_command_makes_a_valid_key() -> None:
    code = GENERATE_COMMAND.split('"')[1]
    namespace: dict[str, object] = {}
    printed: list[str] = []
    exec(code.replace("print(", "printed.append("), {"printed": printed}, namespace)
    assert len(parse_master_key(printed[0], source="generated")) == 32


def test_previous_keys_are_a_comma_list_and_a_bad_entry_is_named_by_position() -> None:
    a, b = os.urandom(32), os.urandom(32)
    text = f" {base64.urlsafe_b64encode(a).decode()} ,{base64.urlsafe_b64encode(b).decode()},"
    assert parse_previous_keys(text) == (a, b)
    assert parse_previous_keys(None) == ()
    assert parse_previous_keys("  ") == ()
    with pytest.raises(MasterKeyError, match=r"CLIPYARD_SECRET_KEY_PREVIOUS \(entry 2\)") as caught:
        parse_previous_keys(f"{base64.urlsafe_b64encode(a).decode()},oops-secret")
    assert "oops-secret" not in str(caught.value)


def test_the_key_file_is_created_once_0600_in_a_0700_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # First start: the file is created, private, and holds a key.
    first = load_key_ring(home, None)
    path = key_file_path(home)
    assert path == home / "credentials" / "master.key"
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert len(parse_master_key(path.read_text(), source="file")) == 32
    assert first.current.id == master_key_id(parse_master_key(path.read_text(), source="file"))
    # Next start: the same key.
    assert load_key_ring(home, None).current.id == first.current.id


def test_a_key_file_others_may_read_is_refused_with_the_chmod_to_run(tmp_path: Path) -> None:
    load_key_ring(tmp_path, None)
    path = key_file_path(tmp_path)
    secret = path.read_text().strip()
    for mode in (0o640, 0o604, 0o660):
        path.chmod(mode)
        with pytest.raises(MasterKeyError) as caught:
            load_key_ring(tmp_path, None)
        assert f"chmod 600 {path}" in str(caught.value)
        assert secret not in str(caught.value)
    # Fixed by the operator: accepted again, with the same key.
    path.chmod(0o600)
    assert load_key_ring(tmp_path, None).current.key == parse_master_key(secret, source="f")


def test_a_key_file_that_holds_no_key_is_refused_not_replaced(tmp_path: Path) -> None:
    path = key_file_path(tmp_path)
    path.parent.mkdir(mode=0o700)
    path.write_text("garbage\n")
    path.chmod(0o600)
    with pytest.raises(MasterKeyError, match="Generate one with"):
        load_key_ring(tmp_path, None)
    assert path.read_text() == "garbage\n"


def test_an_environment_key_wins_and_no_key_file_is_created(tmp_path: Path) -> None:
    env_key, old, older = os.urandom(32), os.urandom(32), os.urandom(32)
    keys = load_key_ring(tmp_path, env_key, (old, env_key, older, old))
    assert keys.current.key == env_key
    # Previous keys: in order, without the current one and without repeats.
    assert [k.key for k in keys.previous] == [old, older]
    assert not key_file_path(tmp_path).exists()
