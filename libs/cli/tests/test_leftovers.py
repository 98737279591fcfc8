"""`clipyard up` stops runtime services no supervisor stopped: real process groups."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from clipyard_cli.leftovers import group_alive, service_groups, stop_leftover_services

WRAPPER = """#!/bin/sh
# Stands in for the supervisor's wrapper: same command line shape, same process group role.
sh -c "$2" &
wait
"""


def _start(tmp_path: Path, home: Path, name: str, command: str) -> subprocess.Popen[bytes]:
    wrapper = tmp_path / "wrapper.sh"
    if not wrapper.exists():  # never rewritten: a shell reads its script as it runs it
        wrapper.write_text(WRAPPER)
    run_dir = home / "runtime" / name
    run_dir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        ["/bin/sh", str(wrapper), str(run_dir), command], start_new_session=True
    )


def _gone(pgid: int) -> bool:
    return not group_alive(pgid)


@pytest.fixture
def started(tmp_path: Path):  # type: ignore[no-untyped-def]
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        if not _gone(process.pid):
            os.killpg(process.pid, 9)
        process.wait(timeout=5)


def test_every_service_group_of_the_home_is_stopped_and_others_are_not(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    home, other = tmp_path / "home", tmp_path / "other-home"
    polite = _start(tmp_path, home, "a", "sleep 600")
    stubborn = _start(tmp_path, home, "b", "trap '' TERM; sleep 600")
    foreign = _start(tmp_path, other, "c", "sleep 600")
    started += [polite, stubborn, foreign]
    deadline = time.monotonic() + 5
    while len(service_groups(home)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert service_groups(home) == sorted([polite.pid, stubborn.pid])

    begun = time.monotonic()
    assert stop_leftover_services(home, grace=0.5) == sorted([polite.pid, stubborn.pid])
    assert time.monotonic() - begun < 3
    assert _gone(polite.pid)
    assert _gone(stubborn.pid)  # SIGKILL after the grace period
    assert not _gone(foreign.pid)
    assert service_groups(home) == []
