"""End-to-end tests use the ``stack`` fixture of ``tests/conftest.py``; those that start runtime
services add ``reaper``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.hostfacts import reap


@pytest.fixture
async def reaper(stack: Any) -> AsyncIterator[None]:
    """Whatever a test leaves running of its stack's runtime services is killed after it
    (services outlive the supervisor by design, so a test failing midway would leave them)."""
    yield
    reap(stack.home)
