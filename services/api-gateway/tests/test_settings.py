"""Gateway settings: defaults, the admin key (environment or key file), refused values."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from api_gateway.domain import hash_secret
from api_gateway.settings import GatewaySettings
from servicekit import SettingsError


def test_defaults_work_for_just_up(tmp_path: Path) -> None:
    settings = GatewaySettings.from_env(
        {"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_ADMIN_KEY": "sekrit-admin"}
    )
    assert (settings.service.http_host, settings.service.http_port) == ("127.0.0.1", 8080)
    assert settings.max_body_bytes == 256 * 1024
    assert settings.admin_key_hash == hash_secret("sekrit-admin")
    assert "sekrit-admin" not in repr(settings)
    # An admin key from the environment leaves no key file behind.
    assert not (tmp_path / "admin.key").exists()


def test_without_an_admin_key_one_is_created_once_in_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = GatewaySettings.from_env({"CLIPYARD_HOME": str(home)})
    key_file = home / "admin.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700  # the home it created is private
    key = key_file.read_text().strip()
    assert key.startswith("cy_admin_")
    assert first.admin_key_hash == hash_secret(key)
    # The next start reads the same key.
    assert GatewaySettings.from_env({"CLIPYARD_HOME": str(home)}).admin_key_hash == hash_secret(key)


def test_an_empty_key_file_gets_a_new_key(tmp_path: Path) -> None:
    (tmp_path / "admin.key").write_text("\n")
    settings = GatewaySettings.from_env({"CLIPYARD_HOME": str(tmp_path)})
    key = (tmp_path / "admin.key").read_text().strip()
    assert key.startswith("cy_admin_")
    assert settings.admin_key_hash == hash_secret(key)
    assert stat.S_IMODE((tmp_path / "admin.key").stat().st_mode) == 0o600


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_timeouts_must_be_positive_numbers(tmp_path: Path, value: str) -> None:
    env = {"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_ADMIN_KEY": "k"}
    with pytest.raises(SettingsError, match="CLIPYARD_HEALTH_TIMEOUT"):
        GatewaySettings.from_env({**env, "CLIPYARD_HEALTH_TIMEOUT": value})
