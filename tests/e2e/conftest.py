"""End-to-end tests use the ``stack`` fixture of ``tests/conftest.py``; those that start runtime
services add ``reaper``.

The stack runs on SQLite. The flows marked ``both_stores`` run a second time, ``[postgres]``, with
every service on one fresh PostgreSQL database (each in its own schema); together they reach every
service and cost about two minutes more (``-m both_stores -k postgres`` runs only those):

* gateway (HTTP, keys, revocation, health of all five; references kept inside a company):
  ``test_http_conventions`` (two tests), ``test_access_references``;
* realizer (projects, issues, execution workspaces as real git worktrees, delivery state, close,
  rescue and reopen): ``test_workspaces_flow``;
* supervisor (a runtime service started, served, stopped; adopted by a restarted supervisor; a
  job's capped output): ``test_runtime_flow`` (two tests), ``test_runtime_ports_jobs`` (one);
* controller (heartbeat runs end to end, a controller restarted during runs):
  ``test_heartbeat_flow`` (two tests), ``test_heartbeat_lifecycle`` (one);
* git-credentials (company secrets, the key vault in PostgreSQL, authenticated clones, pull
  requests; every stored row searched for the tokens): ``test_credentials_flow``.

Flows reading SQLite files themselves (``test_heartbeat_containment``) stay SQLite-only.
"""

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
