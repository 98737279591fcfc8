"""Fixtures of the orchestration tests: the supervisor's orchestration in this process (its
``Supervisor`` context on the in-memory application of the state tests, store calls made inline
on the event loop) driving real service processes, so a test can order what the bus cannot (hold
an identity's lock, let a timer fire behind it) and look at the processes themselves.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from testkit.plugin import sandbox_paths

sys.path.insert(0, str(Path(__file__).parent.parent / "state"))

from state_world import Clock, World, make_app

from runtime_supervisor.adapters.containment.launcher import Launcher
from runtime_supervisor.adapters.process import group_members
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.orchestration.context import Supervisor
from runtime_supervisor.settings import SupervisorSettings, load_settings


async def _inline(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """The store call, made at once (this loop is the store's only user)."""
    return fn(*args, **kwargs)


def _reap(home: Path) -> None:
    """SIGKILL whatever service process a test left running under ``home/runtime``."""
    runtime = home / "runtime"
    if not runtime.is_dir():
        return
    for run_dir in runtime.iterdir():
        try:
            pgid = os.getpgid(int((run_dir / "child.pid").read_text().strip()))
        except (OSError, ValueError):
            continue
        for member in group_members(pgid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(member, signal.SIGKILL)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(clock: Clock) -> RuntimeSupervisorApplication:
    return make_app(clock)


@pytest.fixture
def world(app: RuntimeSupervisorApplication, clock: Clock) -> World:
    return World(app, clock)


@pytest.fixture
async def sup(app: RuntimeSupervisorApplication, tmp_path: Path) -> AsyncIterator[Supervisor]:
    home = tmp_path / "home"
    home.mkdir()
    settings = SupervisorSettings(
        service=load_settings({"CLIPYARD_HOME": str(home), "CLIPYARD_STORE": "memory"}),
        port_range=(44000, 44999),
        stop_grace=3.0,
    )
    supervisor = Supervisor(app=app, store=_inline, settings=settings, base_env=dict(os.environ))
    supervisor.launcher = Launcher.start(home, [Path(p) for p in sandbox_paths().split(":")])
    yield supervisor
    await supervisor.close()
    _reap(home)
    supervisor.launcher.drop_all()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "worktree"
    path.mkdir()
    return path
