"""Fixtures of the supervisor's service tests: a nats-server of the test alone (the supervisor's
store starts empty, and so must its stream), the real supervisor as a process
(``python -m runtime_supervisor``) on it, the upstream events published by the test, and a reaper
that kills whatever service processes a test leaves behind (services outlive the supervisor).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from bus_world import BOARD, Sup, Upstream

from contracts.base import ErrorReply
from contracts.execution_commands import ListWorkspaceOperations
from contracts.workspace_subjects import workspace_operations
from natsbus import BusClient
from runtime_supervisor.adapters.process import group_members
from testkit.nats_server import start_nats_server

StartSupervisor = Callable[..., Awaitable[Any]]


@pytest.fixture
def own_nats(tmp_path: Path) -> Iterator[Any]:
    """A nats-server of this test alone."""
    server = start_nats_server(store_dir=tmp_path / "nats")
    yield server
    server.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The supervisor's ``CLIPYARD_HOME``."""
    path = tmp_path / "home"
    path.mkdir()
    return path


def reap(home: Path) -> list[int]:
    """SIGKILL every service process group recorded under ``home/runtime``."""
    killed: list[int] = []
    runtime = home / "runtime"
    if not runtime.is_dir():
        return killed
    for run_dir in runtime.iterdir():
        try:
            pid = int((run_dir / "child.pid").read_text().strip())
        except (OSError, ValueError):
            continue
        try:
            pgid = os.getpgid(pid)
        except ProcessLookupError:
            continue
        for member in group_members(pgid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(member, signal.SIGKILL)
                killed.append(member)
    return killed


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A workspace directory (the services' cwd)."""
    path = tmp_path / "worktree"
    path.mkdir()
    return path


@pytest.fixture
async def start_supervisor(
    own_nats: Any, home: Path, service_process: Any
) -> AsyncIterator[StartSupervisor]:
    """``await start_supervisor(**env)``: the supervisor as a process on the test's NATS (its
    ``terminate`` at teardown must end within 5 s without stopping any service)."""

    async def start(**env: str) -> Any:
        process = await service_process(
            "runtime_supervisor",
            env={
                "CLIPYARD_NATS_URL": own_nats.url,
                "CLIPYARD_HOME": str(home),
                "CLIPYARD_PORT_RANGE": "43000-43999",
                "CLIPYARD_RUNTIME_STOP_GRACE": "3",
                **env,
            },
        )
        await _endpoints_ready(own_nats.url)
        return process

    yield start
    reap(home)


async def _endpoints_ready(url: str, timeout: float = 15.0) -> None:
    """Wait until the supervisor's endpoints answer. servicekit announces the service (answers
    ``$SRV.PING``) only once the register hook has added every endpoint, so this is a cheap
    second check that the endpoints the tests use answer, kept as a guard."""
    connection = await nats.connect(url)
    try:
        bus = BusClient(connection)
        query = ListWorkspaceOperations(principal=BOARD, workspace_id=str(uuid.uuid4()))
        deadline = time.monotonic() + timeout
        while True:
            reply = await bus.request(workspace_operations("supervisor"), query, timeout=5.0)
            if not (isinstance(reply, ErrorReply) and reply.code == "service_unavailable"):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the supervisor's endpoints did not answer: {reply}")
            await asyncio.sleep(0.05)
    finally:
        await connection.drain()


@pytest.fixture
async def nc(own_nats: Any) -> AsyncIterator[Any]:
    """A NATS connection of the test."""
    connection = await nats.connect(own_nats.url)
    yield connection
    await connection.drain()


@pytest.fixture
def upstream(nc: Any) -> Upstream:
    """Publishes the realizer's and the controller's events."""
    return Upstream(nc.jetstream())


@pytest.fixture
def sup(nc: Any) -> Sup:
    """The supervisor over the bus."""
    return Sup(BusClient(nc))
