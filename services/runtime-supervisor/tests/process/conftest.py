"""Fixtures of the process-layer tests: services started for a test are killed at its end."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path

import pytest

from runtime_supervisor.adapters.process import Spawned, group_members, spawn_service

Spawn = Callable[..., Awaitable[Spawned]]


def base_env() -> dict[str, str]:
    """What a sanitized service environment keeps: a PATH (and nothing of the test's)."""
    return {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")}


def kill_group(pgid: int) -> None:
    """SIGKILL whatever is left of a group (and of the session it leads)."""
    for pid in group_members(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
async def spawn(tmp_path: Path) -> AsyncIterator[Spawn]:
    """``await spawn(command, name=..., env=..., cwd=...)``: a service in ``tmp_path/<name>``."""
    groups: list[int] = []

    async def start(
        command: str,
        *,
        name: str = "svc",
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Spawned:
        spawned = await spawn_service(
            command=command,
            cwd=cwd or tmp_path,
            env=base_env() if env is None else env,
            run_dir=tmp_path / name,
        )
        groups.append(spawned.pgid)
        return spawned

    yield start
    for pgid in groups:
        kill_group(pgid)


@pytest.fixture
def free_block() -> Iterator[Callable[[int], tuple[int, list[socket.socket]]]]:
    """``free_block(n)`` → ``(low, listeners)``: n consecutive ports, each held by a listener
    of this test (close one to free it); all are closed at the end."""
    held: list[socket.socket] = []

    def block(n: int) -> tuple[int, list[socket.socket]]:
        for low in range(20000, 30000 - n, 97):
            listeners: list[socket.socket] = []
            try:
                for port in range(low, low + n):
                    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    listeners.append(listener)
                    listener.bind(("127.0.0.1", port))
                    listener.listen()
            except OSError:
                for listener in listeners:
                    listener.close()
                continue
            held.extend(listeners)
            return low, listeners
        raise RuntimeError(f"no block of {n} free ports in 20000-30000")

    yield block
    for listener in held:
        listener.close()


@pytest.fixture
def service_env() -> dict[str, str]:
    """A minimal service environment (PATH only)."""
    return base_env()
