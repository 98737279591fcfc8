"""A relay's record is written before it starts, with its command line, so that a supervisor
killed while a relay starts leaves enough behind for its successor: the key to start it again,
the command line to end one that announced itself to nobody. A start that fails leaves nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime_supervisor.adapters.containment import relays
from runtime_supervisor.adapters.containment.relays import Relay, revive_service_relay

KEY = {"port": 47001, "netns": "/run/netns/cy-test"}
ARGV = ["some.module", "a", "b"]


def _this_process() -> Relay:
    """A live process as a relay (this one: its start time is real)."""
    return Relay(os.getpid(), relays._start_time(os.getpid()))


def test_the_key_and_command_line_are_recorded_before_the_relay_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "relay.json"
    seen: list[dict[str, object]] = []

    def start(argv: list[str], log: Path, what: str) -> Relay:
        seen.append(json.loads(record.read_text()))
        return _this_process()

    monkeypatch.setattr(relays, "_start", start)
    relay = relays._keep(record, KEY, ARGV, "a relay")
    assert seen == [{**KEY, "pid": None, "startTime": None, "argv": ARGV}]
    written = json.loads(record.read_text())
    assert (written["pid"], written["startTime"]) == (relay.pid, relay.start_time)
    assert not list(tmp_path.glob("*.tmp"))  # written whole, then moved into place


def test_a_start_that_fails_leaves_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def start(argv: list[str], log: Path, what: str) -> Relay:
        raise OSError("the relay did not start")

    monkeypatch.setattr(relays, "_start", start)
    with pytest.raises(OSError, match="did not start"):
        relays._keep(tmp_path / "relay.json", KEY, ARGV, "a relay")
    assert not (tmp_path / "relay.json").exists()


def test_a_record_left_mid_start_is_started_again_on_revival(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The supervisor died while the relay started: the key is there, no pid.
    left = {**KEY, "pid": None, "startTime": None, "argv": ["nothing-runs-this"]}
    (tmp_path / "relay.json").write_text(json.dumps(left))
    started: list[list[str]] = []

    def start(argv: list[str], log: Path, what: str) -> Relay:
        started.append(argv)
        return _this_process()

    monkeypatch.setattr(relays, "_start", start)
    revive_service_relay(tmp_path)
    assert started == [[relays._RELAY, "127.0.0.1:47001", "/run/netns/cy-test@127.0.0.1:47001"]]
    assert json.loads((tmp_path / "relay.json").read_text())["pid"] == os.getpid()


def test_a_process_that_announced_itself_to_nobody_is_ended_by_its_command_line(
    tmp_path: Path,
) -> None:
    # Started as the supervisor starts relays; its starter died before recording the pid.
    argv = ["http.server", "--bind", "127.0.0.1", "0"]
    orphan = subprocess.Popen(
        [sys.executable, "-I", "-m", *argv],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        record = tmp_path / "relay.json"
        record.write_text(json.dumps({**KEY, "pid": None, "startTime": None, "argv": argv}))
        time.sleep(0.2)
        relays._stop(record)
        assert orphan.wait(10) == -9
        assert not record.exists()
    finally:
        if orphan.poll() is None:
            orphan.kill()
