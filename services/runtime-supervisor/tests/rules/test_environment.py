"""Environments of services and jobs (ARCHITECTURE §6; reference case 42 with our names)."""

from __future__ import annotations

import pytest

from runtime_supervisor.domain.environment import is_sensitive_name, sanitized_env, service_env


def test_case_42_only_host_and_path_survive() -> None:
    base = {
        "DATABASE_URL": "postgres://u:p@db/x",
        "PAPERCLIP_HOME": "/srv/paperclip",
        "PAPERCLIP_INSTANCE_ID": "i-1",
        "npm_config_tailscale_auth": "key",
        "npm_config_authenticated_private": "1",
        "HOST": "0.0.0.0",
        "PATH": "/usr/bin:/bin",
    }
    assert sanitized_env(base) == {"HOST": "0.0.0.0", "PATH": "/usr/bin:/bin"}


@pytest.mark.parametrize(
    "name",
    [
        "CLIPYARD_HOME",
        "CLIPYARD_SECRET_KEY",
        "PAPERCLIP_API_KEY",
        "NATS_URL",
        "NATS_CREDS",
        "CLIPYARD_NATS_PASSWORD",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITLAB_TOKEN",
        "POSTGRES_PASSWORD",
        "PGPASSWORD",
        "PGHOST",
        "DATABASE_URL",
        "EVENTSTORE_DATABASE_URL",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "npm_config__auth",
        "NPM_CONFIG_AUTHTOKEN",
    ],
)
def test_sensitive_names(name: str) -> None:
    assert is_sensitive_name(name)
    assert sanitized_env({name: "secret", "LANG": "C.UTF-8"}) == {"LANG": "C.UTF-8"}


@pytest.mark.parametrize(
    "name", ["PATH", "HOME", "LANG", "HOST", "SHELL", "OTEL_SERVICE_NAME", "npm_config_cache"]
)
def test_ordinary_names(name: str) -> None:
    assert not is_sensitive_name(name)


def test_service_env_adds_port_and_host_then_the_rendered_env() -> None:
    base = {"PATH": "/bin", "HOST": "0.0.0.0", "GH_TOKEN": "t", "PORT": "1"}
    env = service_env(base, port=41001, port_env_key=None, rendered_env={"APP_URL": "x"})
    assert env == {"PATH": "/bin", "HOST": "127.0.0.1", "PORT": "41001", "APP_URL": "x"}
    assert base["HOST"] == "0.0.0.0"


def test_service_env_with_an_env_key_and_no_port() -> None:
    env = service_env({"PATH": "/bin"}, port=5173, port_env_key="VITE_PORT", rendered_env={})
    assert env == {"PATH": "/bin", "VITE_PORT": "5173", "HOST": "127.0.0.1"}
    assert "PORT" not in service_env({}, port=None, port_env_key=None, rendered_env={})


def test_the_configured_env_wins_even_over_dropped_names() -> None:
    env = service_env(
        {"DATABASE_URL": "server", "PATH": "/bin"},
        port=3000,
        port_env_key=None,
        rendered_env={"DATABASE_URL": "sqlite:///dev.db", "HOST": "0.0.0.0"},
    )
    assert env == {
        "PATH": "/bin",
        "PORT": "3000",
        "HOST": "0.0.0.0",
        "DATABASE_URL": "sqlite:///dev.db",
    }
