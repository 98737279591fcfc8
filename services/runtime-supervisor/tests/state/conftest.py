"""Fixtures of the state tests: the supervisor's application on the in-memory store with a
pinned clock, and ``world`` (``state_world.World``) feeding its inboxes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from state_world import Clock, World, make_app

from runtime_supervisor.application import RuntimeSupervisorApplication


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(clock: Clock) -> RuntimeSupervisorApplication:
    return make_app(clock)


@pytest.fixture
def world(app: RuntimeSupervisorApplication, clock: Clock) -> World:
    return World(app, clock)
