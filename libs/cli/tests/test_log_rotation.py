"""The local stack's logs rotate: each process is told its file, nats-server rotates its own, and
a bad rotation setting stops ``clipyard up`` with the variable's name."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from clipyard_cli.home import NATS_USERS
from clipyard_cli.natsconf import nats_log_path, server_config_path, write_server_config
from clipyard_cli.probes import StackSettings
from clipyard_cli.stack import (
    StackError,
    find_nats_config,
    find_nats_server,
    spawn,
    start_nats_server,
    stop_process,
)
from servicekit.settings import Rotation

REPO = Path(__file__).resolve().parents[3]


def _wait_for(predicate, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_process_is_told_its_log_file(tmp_path: Path) -> None:
    argv = ["sh", "-c", 'echo "log file: $CLIPYARD_LOG_FILE"']
    process = spawn("probe", argv, {"PATH": "/usr/bin:/bin"}, tmp_path)
    try:
        expected = f"log file: {tmp_path / 'logs' / 'probe.log'}"
        assert _wait_for(lambda: expected in process.log_tail())
    finally:
        stop_process(process)


def test_the_log_tail_reaches_into_the_newest_backup(tmp_path: Path) -> None:
    process = spawn("probe", ["true"], {"PATH": "/usr/bin:/bin"}, tmp_path)
    stop_process(process)
    process.log_path.with_name("probe.log.1").write_text("".join(f"old {n}\n" for n in range(9)))
    process.log_path.write_text("new 1\nnew 2\n")
    assert process.log_tail(4).splitlines() == ["old 7", "old 8", "new 1", "new 2"]
    assert process.log_tail(1) == "new 2"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CLIPYARD_LOG_MAX_BYTES", "10MiB"),
        ("CLIPYARD_LOG_BACKUPS", "-2"),
        ("CLIPYARD_SPANS_MAX_BYTES", "0"),
        ("CLIPYARD_SPANS_BACKUPS", "all"),
    ],
)
def test_a_bad_rotation_setting_stops_up_naming_the_variable(
    tmp_path: Path, name: str, value: str
) -> None:
    with pytest.raises(ValueError, match=name):
        StackSettings.from_env({"CLIPYARD_HOME": str(tmp_path), name: value})


def test_nats_server_is_not_started_with_a_bad_log_setting(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="CLIPYARD_LOG_BACKUPS"):
        _start_nats(tmp_path, {"CLIPYARD_LOG_BACKUPS": "some"})
    assert not nats_log_path(tmp_path).exists()


def test_the_stack_reads_the_rotation_settings(tmp_path: Path) -> None:
    settings = StackSettings.from_env(
        {
            "CLIPYARD_HOME": str(tmp_path),
            "CLIPYARD_LOG_MAX_BYTES": "512",
            "CLIPYARD_LOG_BACKUPS": "1",
        }
    )
    assert settings.log_rotation == Rotation(max_bytes=512, backups=1)
    assert settings.spans_rotation == Rotation(max_bytes=20 << 20, backups=5)


def test_the_nats_server_configuration_includes_the_repository_one(tmp_path: Path) -> None:
    home = tmp_path / "a home"
    config = find_nats_config({}, start=REPO)
    path = write_server_config(config, home, Rotation(max_bytes=4096, backups=3))
    assert path == server_config_path(home)
    assert path.stat().st_mode & 0o777 == 0o600
    lines = path.read_text().splitlines()
    include = next(line for line in lines if line.startswith("include "))
    # NATS reads an include relative to the including file only.
    relative = include.removeprefix("include ").strip('"')
    assert not relative.startswith("/")
    assert (path.parent / relative).resolve() == config
    assert f'log_file: "{nats_log_path(home)}"' in lines
    assert "logfile_size_limit: 4096" in lines
    assert "logfile_max_num: 4" in lines  # NATS counts the live file too


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_nats(home: Path, env: dict[str, str], port: int = 0):  # type: ignore[no-untyped-def]
    return start_nats_server(
        binary=find_nats_server(),
        config=find_nats_config({}, start=REPO),
        home=home,
        passwords={user: f"pw-{user}" for user in NATS_USERS},
        host="127.0.0.1",
        port=port or _free_port(),
        base_env={"PATH": "/usr/bin:/bin", **env},
    )


@pytest.mark.integration
def test_nats_server_rotates_its_own_log(tmp_path: Path) -> None:
    port = _free_port()
    process = _start_nats(
        tmp_path, {"CLIPYARD_LOG_MAX_BYTES": "600", "CLIPYARD_LOG_BACKUPS": "2"}, port
    )
    live = nats_log_path(tmp_path)
    try:
        # Its start-up banner alone is several times the limit.
        assert _wait_for(lambda: "Server is ready" in process.log_tail(200)), process.log_tail()
        assert process.alive()
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        stop_process(process)
    backups = sorted(live.parent.glob("nats-server.log.*"))
    assert 1 <= len(backups) <= 2, backups
    assert all(path.stat().st_size < 600 + 300 for path in [*backups, live])
