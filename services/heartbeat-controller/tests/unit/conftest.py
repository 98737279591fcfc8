"""Fixtures of the controller's unit tests: the application on the in-memory store with a
pinned clock, and ``world`` (``controller_world.World``) feeding it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from controller_world import Clock, World, make_app

from heartbeat_controller.application import HeartbeatControllerApplication


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(clock: Clock) -> HeartbeatControllerApplication:
    return make_app(clock)


@pytest.fixture
def world(app: HeartbeatControllerApplication, clock: Clock) -> World:
    return World(app, clock)
