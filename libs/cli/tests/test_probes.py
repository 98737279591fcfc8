"""Stack settings name the variable (and the fix) when a value is unusable."""

from __future__ import annotations

from pathlib import Path

import pytest

from clipyard_cli.main import main
from clipyard_cli.probes import StackSettings


@pytest.mark.parametrize("value", ["abc", "0", "65536", "-1", "80.5", "²"])
def test_a_bad_http_port_names_the_variable_and_the_fix(tmp_path: Path, value: str) -> None:
    env = {"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_HTTP_PORT": value}
    with pytest.raises(ValueError, match="CLIPYARD_HTTP_PORT") as caught:
        StackSettings.from_env(env)
    assert "1-65535" in str(caught.value)
    assert "invalid literal" not in str(caught.value)


def test_a_bad_ready_timeout_or_nats_port_names_the_variable(tmp_path: Path) -> None:
    home = {"CLIPYARD_HOME": str(tmp_path)}
    with pytest.raises(ValueError, match="CLIPYARD_READY_TIMEOUT"):
        StackSettings.from_env({**home, "CLIPYARD_READY_TIMEOUT": "soon"})
    with pytest.raises(ValueError, match="CLIPYARD_NATS_URL"):
        StackSettings.from_env({**home, "CLIPYARD_NATS_URL": "nats://127.0.0.1:abc"})


def test_good_values_are_read(tmp_path: Path) -> None:
    settings = StackSettings.from_env(
        {
            "CLIPYARD_HOME": str(tmp_path),
            "CLIPYARD_HTTP_PORT": "9090",
            "CLIPYARD_READY_TIMEOUT": "5",
            "CLIPYARD_NATS_URL": "nats://127.0.0.1:4333",
        }
    )
    assert (settings.http_port, settings.ready_timeout, settings.nats_port) == (9090, 5.0, 4333)
    default = StackSettings.from_env({"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_HTTP_PORT": ""})
    assert default.http_port == 8080


def test_clipyard_up_reports_the_variable_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CLIPYARD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLIPYARD_HTTP_PORT", "abc")
    assert main(["up"]) == 1
    err = capsys.readouterr().err
    assert "CLIPYARD_HTTP_PORT='abc' is not a TCP port" in err
    assert "Traceback" not in err
