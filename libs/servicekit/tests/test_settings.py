"""Service settings: defaults that work for `just up`, and clear refusals of unusable values."""

from __future__ import annotations

from pathlib import Path

import pytest

from servicekit import ServiceSettings, SettingsError


def test_defaults_work_for_the_embedded_stack(tmp_path: Path) -> None:
    # With only CLIPYARD_HOME set, a service gets SQLite, local NATS and the local node.
    settings = ServiceSettings.from_env("workspace-realizer", {"CLIPYARD_HOME": str(tmp_path)})
    assert settings.home == tmp_path.resolve()
    assert settings.store.kind == "sqlite"
    assert settings.nats.url == "nats://127.0.0.1:4222"
    assert settings.node_id == "local"
    assert (settings.http_host, settings.http_port) == ("127.0.0.1", 8080)


def test_home_is_resolved_to_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = ServiceSettings.from_env("api-gateway", {"CLIPYARD_HOME": "rel/home"})
    assert settings.home == (tmp_path / "rel" / "home").resolve()
    assert settings.home.is_absolute()


def test_postgres_without_a_dsn_is_refused_with_the_fix() -> None:
    with pytest.raises(SettingsError, match="CLIPYARD_POSTGRES_DSN"):
        ServiceSettings.from_env("api-gateway", {"CLIPYARD_STORE": "postgres"})


def test_unknown_store_kind_is_refused() -> None:
    with pytest.raises(SettingsError, match="sqlite, postgres or memory"):
        ServiceSettings.from_env("api-gateway", {"CLIPYARD_STORE": "mongo"})


@pytest.mark.parametrize("port", ["0", "70000", "http"])
def test_bad_http_port_is_refused(port: str) -> None:
    with pytest.raises(SettingsError, match="CLIPYARD_HTTP_PORT"):
        ServiceSettings.from_env("api-gateway", {"CLIPYARD_HTTP_PORT": port})


def test_secrets_stay_out_of_repr(tmp_path: Path) -> None:
    # A logged settings object never shows the NATS password or the admin key.
    settings = ServiceSettings.from_env(
        "api-gateway",
        {
            "CLIPYARD_HOME": str(tmp_path),
            "CLIPYARD_NATS_PASSWORD": "hunter2-nats",
            "CLIPYARD_ADMIN_KEY": "cy_admin_supersecret",
        },
    )
    assert "hunter2-nats" not in repr(settings)
    assert "cy_admin_supersecret" not in repr(settings)
    assert settings.nats.password == "hunter2-nats"


def test_event_stream_window_and_retention_are_configurable() -> None:
    settings = ServiceSettings.from_env(
        "api-gateway",
        {"CLIPYARD_EVENT_DUPLICATE_WINDOW": "120", "CLIPYARD_EVENT_RETENTION_DAYS": "7"},
    )
    assert (settings.event_duplicate_window, settings.event_retention_days) == (120.0, 7.0)
    with pytest.raises(SettingsError, match="CLIPYARD_EVENT_RETENTION_DAYS"):
        ServiceSettings.from_env("api-gateway", {"CLIPYARD_EVENT_RETENTION_DAYS": "-1"})


def test_log_and_span_rotation_default_to_10_and_20_mib_with_5_backups(tmp_path: Path) -> None:
    settings = ServiceSettings.from_env("api-gateway", {"CLIPYARD_HOME": str(tmp_path)})
    assert settings.log_file is None
    assert (settings.log_rotation.max_bytes, settings.log_rotation.backups) == (10 << 20, 5)
    assert (settings.spans_rotation.max_bytes, settings.spans_rotation.backups) == (20 << 20, 5)


def test_log_file_and_rotation_are_read(tmp_path: Path) -> None:
    env = {
        "CLIPYARD_LOG_FILE": str(tmp_path / "svc.log"),
        "CLIPYARD_LOG_MAX_BYTES": "1000",
        "CLIPYARD_LOG_BACKUPS": "0",
        "CLIPYARD_SPANS_MAX_BYTES": "2000",
        "CLIPYARD_SPANS_BACKUPS": "9",
    }
    settings = ServiceSettings.from_env("api-gateway", env)
    assert settings.log_file == tmp_path / "svc.log"
    assert (settings.log_rotation.max_bytes, settings.log_rotation.backups) == (1000, 0)
    assert (settings.spans_rotation.max_bytes, settings.spans_rotation.backups) == (2000, 9)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CLIPYARD_LOG_MAX_BYTES", "10M"),
        ("CLIPYARD_LOG_BACKUPS", "-1"),
        ("CLIPYARD_SPANS_MAX_BYTES", "0"),
        ("CLIPYARD_SPANS_BACKUPS", "five"),
        ("CLIPYARD_LOG_FILE", "relative/svc.log"),
    ],
)
def test_a_bad_log_or_span_setting_names_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        ServiceSettings.from_env("api-gateway", {name: value})


def test_numbers_from_the_environment_say_what_is_wrong_and_the_default() -> None:
    from servicekit.settings import SettingsError, env_count, env_positive, env_seconds

    assert env_seconds({}, "X", 5.0) == 5.0
    assert env_seconds({"X": "  "}, "X", 5.0) == 5.0
    assert env_seconds({"X": "2.5"}, "X", 5.0) == 2.5
    assert env_seconds({"X": "30s"}, "X", 5.0) == 30.0
    for bad in ("0", "-1", "nan", "inf", "ten", "30m"):
        wrong = r"X=.* is not a positive number of seconds; unset it for 5"
        with pytest.raises(SettingsError, match=wrong):
            env_seconds({"X": bad}, "X", 5.0)
    assert env_positive({"X": "7"}, "X", 30.0, unit="days") == 7.0
    with pytest.raises(SettingsError, match="positive number of days"):
        env_positive({"X": "7s"}, "X", 30.0, unit="days")
    assert env_count({"X": " 12 "}, "X", 4) == 12
    for bad in ("0", "1.5", "-3", "\uff14"):  # a full-width digit is not ASCII
        with pytest.raises(SettingsError, match="is not a positive whole number; unset it for 4"):
            env_count({"X": bad}, "X", 4)


def test_event_replicas_default_to_one_and_take_a_cluster_size(tmp_path: Path) -> None:
    home = {"CLIPYARD_HOME": str(tmp_path)}
    assert ServiceSettings.from_env("api-gateway", home).event_replicas == 1
    settings = ServiceSettings.from_env("api-gateway", {**home, "CLIPYARD_EVENT_REPLICAS": "3"})
    assert settings.event_replicas == 3


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("0", "not a positive whole number; unset it for 1"),
        ("-1", "not a positive whole number"),
        ("three", "not a positive whole number"),
        ("2.5", "not a positive whole number"),
        ("6", "set it to the number of JetStream servers, 1 to 5"),
    ],
)
def test_unusable_event_replicas_are_refused_saying_what_to_set(value: str, says: str) -> None:
    with pytest.raises(SettingsError, match="CLIPYARD_EVENT_REPLICAS") as refused:
        ServiceSettings.from_env("api-gateway", {"CLIPYARD_EVENT_REPLICAS": value})
    assert says in str(refused.value)
