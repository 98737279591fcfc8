"""``CLIPYARD_EVENT_REPLICAS`` under ``clipyard up``: checked before anything starts, handed on."""

from __future__ import annotations

from pathlib import Path

import pytest

from clipyard_cli.main import main
from clipyard_cli.probes import StackSettings
from clipyard_cli.stack import SERVICE_LAUNCHES, service_env

CLUSTER = "nats://10.0.0.1:4222,nats://10.0.0.2:4222,nats://10.0.0.3:4222"


def test_the_embedded_stack_keeps_one_replica(tmp_path: Path) -> None:
    assert StackSettings.from_env({"CLIPYARD_HOME": str(tmp_path)}).event_replicas == 1
    ones = StackSettings.from_env({"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_EVENT_REPLICAS": "1"})
    assert ones.event_replicas == 1


def test_an_external_cluster_takes_three(tmp_path: Path) -> None:
    env = {"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_NATS_URL": CLUSTER}
    settings = StackSettings.from_env({**env, "CLIPYARD_EVENT_REPLICAS": "3"})
    assert settings.event_replicas == 3


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"CLIPYARD_EVENT_REPLICAS": "3"}, "CLIPYARD_EVENT_REPLICAS=3 needs a NATS cluster"),
        ({"CLIPYARD_EVENT_REPLICAS": "0"}, "CLIPYARD_EVENT_REPLICAS='0' is not a positive whole"),
        (
            {"CLIPYARD_EVENT_REPLICAS": "9", "CLIPYARD_NATS_URL": CLUSTER},
            "set it to the number of JetStream servers, 1 to 5",
        ),
    ],
)
def test_unusable_replicas_stop_up_before_anything_starts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    says: str,
) -> None:
    monkeypatch.setenv("CLIPYARD_HOME", str(tmp_path / "home"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["up"]) == 1
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err
    assert not (tmp_path / "home" / "logs").exists()  # nothing was started


def test_every_service_is_given_the_replicas(tmp_path: Path) -> None:
    for launch in SERVICE_LAUNCHES:
        given = {"CLIPYARD_EVENT_REPLICAS": "3", "CLIPYARD_NATS_URL": CLUSTER}
        env = service_env(
            given, launch, home=tmp_path, nats_url=CLUSTER, password="p", admin_key="k"
        )
        assert env["CLIPYARD_EVENT_REPLICAS"] == "3"
        default = service_env({}, launch, home=tmp_path, nats_url="u", password="p", admin_key="k")
        assert default["CLIPYARD_EVENT_REPLICAS"] == "1"
