"""The git-credentials' settings: DECISIONS 9 names, master keys, nothing secret in repr."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from git_credentials.adapters.masterkey import GENERATE_COMMAND
from git_credentials.settings import load_credentials_settings
from servicekit import SettingsError


def test_defaults(tmp_path: Path) -> None:
    settings = load_credentials_settings({"CLIPYARD_HOME": str(tmp_path)})
    assert settings.service.service == "git-credentials"
    assert settings.gitlab_hosts == ""
    assert settings.ca_cert_path is None
    assert settings.github_api_url == "https://api.github.com"
    assert settings.secret_key is None
    assert settings.previous_secret_keys == ()
    assert dict(settings.server_env) == {}


def test_every_setting_is_read_and_secrets_stay_out_of_repr(tmp_path: Path) -> None:
    key, old = os.urandom(32), os.urandom(32)
    key_text, old_text = (base64.urlsafe_b64encode(k).decode() for k in (key, old))
    env = {
        "CLIPYARD_HOME": str(tmp_path),
        "CLIPYARD_GITLAB_HOSTS": " gitlab.a.example, gitlab.b.example:8443 ",
        "CLIPYARD_GITLAB_CA_CERT_PATH": " /etc/ssl/gitlab-ca.pem ",
        "CLIPYARD_GITHUB_API_URL": "http://127.0.0.1:9999/api/",
        "CLIPYARD_SECRET_KEY": key_text,
        "CLIPYARD_SECRET_KEY_PREVIOUS": old_text,
        "GITHUB_TOKEN": "ghp_server_canary",
        "GH_TOKEN": "   ",
        "GITLAB_TOKEN": "glpat_server_canary",
        "OTHER_TOKEN": "not-ours",
        "CLIPYARD_POSTGRES_DSN": "postgresql://u:dsn_canary@h/db",
        "CLIPYARD_NATS_PASSWORD": "nats_canary",
    }
    settings = load_credentials_settings(env)
    assert settings.gitlab_hosts == "gitlab.a.example, gitlab.b.example:8443"
    assert settings.ca_cert_path == "/etc/ssl/gitlab-ca.pem"
    assert settings.github_api_url == "http://127.0.0.1:9999/api"
    assert settings.secret_key == key
    assert settings.previous_secret_keys == (old,)
    # The server's own tokens: the three names, when set and not blank.
    assert dict(settings.server_env) == {
        "GITHUB_TOKEN": "ghp_server_canary",
        "GITLAB_TOKEN": "glpat_server_canary",
    }
    shown = repr(settings) + str(settings)
    for secret in (
        key_text,
        old_text,
        repr(key),
        repr(old),
        "ghp_server_canary",
        "glpat_server_canary",
        "dsn_canary",
        "nats_canary",
    ):
        assert secret not in shown
    assert "gitlab.a.example" in shown  # the repr still shows what is not secret


def test_a_blank_ca_path_is_unset() -> None:
    settings = load_credentials_settings({"CLIPYARD_GITLAB_CA_CERT_PATH": "   "})
    assert settings.ca_cert_path is None


def test_an_invalid_secret_key_stops_the_start_saying_how_to_make_one() -> None:
    with pytest.raises(SettingsError) as caught:
        load_credentials_settings({"CLIPYARD_SECRET_KEY": "my-password-123"})
    assert "CLIPYARD_SECRET_KEY" in str(caught.value)
    assert GENERATE_COMMAND in str(caught.value)
    assert "my-password-123" not in str(caught.value)


def test_an_invalid_previous_key_stops_the_start() -> None:
    with pytest.raises(SettingsError, match="CLIPYARD_SECRET_KEY_PREVIOUS"):
        load_credentials_settings({"CLIPYARD_SECRET_KEY_PREVIOUS": "short"})


def test_a_github_api_url_must_be_http() -> None:
    with pytest.raises(SettingsError, match="CLIPYARD_GITHUB_API_URL"):
        load_credentials_settings({"CLIPYARD_GITHUB_API_URL": "ftp://example.com"})


@pytest.mark.parametrize(
    "url",
    [
        "http://api.example.com",
        "http://10.0.0.5:8080/api",
        "https://",
        "http://user:hunter2@github.internal/api?x=1",
    ],
)
def test_the_github_api_url_is_https_or_loopback_http_and_shown_scrubbed(url: str) -> None:
    with pytest.raises(SettingsError, match="loopback only") as refused:
        load_credentials_settings({"CLIPYARD_GITHUB_API_URL": url})
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize(
    "url", ["https://api.github.com", "https://ghe.example.com/api/v3", "http://localhost:8080"]
)
def test_https_and_loopback_api_urls_are_accepted(url: str) -> None:
    assert load_credentials_settings({"CLIPYARD_GITHUB_API_URL": url}).github_api_url == url
