"""Fixtures of the slot tests: the supervisor as a real process on a nats-server of the test
alone (as in ``tests/service``), real git repositories with worktrees made by git, a fake store
file and key file under ``$CLIPYARD_HOME``, and the bus helpers of ``tests/service``."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "service"))

from bus_world import Upstream
from slot_world import Repo, Slots, endpoints_ready, reap_runs

from natsbus import BusClient
from testkit.nats_server import start_nats_server

StartSupervisor = Callable[..., Awaitable[Any]]


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[Any]:
    server = start_nats_server(store_dir=tmp_path / "nats")
    yield server
    server.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """``$CLIPYARD_HOME``, with a fake store and a key file an agent must not read."""
    path = tmp_path / "home"
    (path / "data").mkdir(parents=True)
    (path / "data" / "fake-store.sqlite").write_text("STORE-SECRET-ROWS\n")
    (path / "master.key").write_text("KEY-FILE-SECRET\n")
    (path / "master.key").chmod(0o644)  # readable by anyone who can reach it: only the
    (path / "data" / "fake-store.sqlite").chmod(0o644)  # sandbox keeps an agent away
    return path


@pytest.fixture
async def start_supervisor(
    own_nats: Any, home: Path, service_process: Any
) -> AsyncIterator[StartSupervisor]:
    async def start(**env: str) -> Any:
        process = await service_process(
            "runtime_supervisor",
            env={
                "CLIPYARD_NATS_URL": own_nats.url,
                "CLIPYARD_HOME": str(home),
                "CLIPYARD_PORT_RANGE": "44000-44999",
                "CLIPYARD_RUNTIME_STOP_GRACE": "3",
                "CLIPYARD_SLOTS": "2",
                **env,
            },
        )
        await endpoints_ready(own_nats.url)
        return process

    yield start
    reap_runs(home)


@pytest.fixture
async def nc(own_nats: Any) -> AsyncIterator[Any]:
    connection = await nats.connect(own_nats.url)
    yield connection
    await connection.drain()


@pytest.fixture
def upstream(nc: Any) -> Upstream:
    return Upstream(nc.jetstream())


@pytest.fixture
def slots(nc: Any) -> Slots:
    return Slots(BusClient(nc))


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    root.mkdir()
    made = Repo(root=root, worktree=tmp_path / "wt" / "agent-work",
                sibling=tmp_path / "wt" / "sibling")  # fmt: skip
    made.git("init", "-q", "-b", "main")
    (root / "README").write_text("hello\n")
    made.git("add", "README")
    made.git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "init")
    made.git("worktree", "add", "-q", str(made.worktree), "-b", "agent-work")
    made.git("worktree", "add", "-q", str(made.sibling), "-b", "sibling")
    (made.sibling / "sibling-secret.txt").write_text("SIBLING-SECRET\n")
    return made
