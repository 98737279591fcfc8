"""A relay's record is written before it starts, so that a supervisor killed while a relay starts
leaves enough behind for its successor to start it again; a start that fails leaves nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runtime_supervisor.containment import relays
from runtime_supervisor.containment.relays import Relay, revive_service_relay

KEY = {"port": 47001, "netns": "/run/netns/cy-test"}


def _this_process() -> Relay:
    """A live process as a relay (this one: its start time is real)."""
    return Relay(os.getpid(), relays._start_time(os.getpid()))


def test_the_key_is_recorded_before_the_relay_starts(tmp_path: Path) -> None:
    record = tmp_path / "relay.json"
    seen: list[dict[str, object]] = []

    def start() -> Relay:
        seen.append(json.loads(record.read_text()))
        return _this_process()

    relay = relays._keep(record, KEY, start)
    assert seen == [{**KEY, "pid": None, "startTime": None}]
    assert json.loads(record.read_text()) == {**KEY, "pid": relay.pid,
                                              "startTime": relay.start_time}  # fmt: skip


def test_a_start_that_fails_leaves_no_record(tmp_path: Path) -> None:
    record = tmp_path / "relay.json"

    def start() -> Relay:
        raise OSError("the relay did not start")

    with pytest.raises(OSError, match="did not start"):
        relays._keep(record, KEY, start)
    assert not record.exists()


def test_a_record_left_mid_start_is_started_again_on_revival(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The supervisor died while the relay started: the key is there, no pid.
    (tmp_path / "relay.json").write_text(json.dumps({**KEY, "pid": None, "startTime": None}))
    started: list[tuple[str, str]] = []

    def start_relay(listen: str, target: str, log: Path) -> Relay:
        started.append((listen, target))
        return _this_process()

    monkeypatch.setattr(relays, "start_relay", start_relay)
    revive_service_relay(tmp_path)
    assert started == [("127.0.0.1:47001", "/run/netns/cy-test@127.0.0.1:47001")]
    assert json.loads((tmp_path / "relay.json").read_text())["pid"] == os.getpid()
