"""A service process on SQLite imports neither psycopg nor httpx's command-line client: together
they were a quarter of each service's start."""

from __future__ import annotations

import subprocess
import sys

import pytest

_LEFT_OUT = ("psycopg", "eventsourcing.postgres", "rich.console", "pygments.lexers")

_PROBE = """
import sys
from servicekit.lean_imports import leave_out_cli_modules
leave_out_cli_modules()
import {module}.app
from eventstore.settings import SQLITE_FACTORY_TOPIC
__import__(SQLITE_FACTORY_TOPIC.split(":")[0])  # what a SQLite store's start imports
print(" ".join(name for name in {left_out!r} if name in sys.modules))
"""


@pytest.mark.parametrize(
    "module",
    [
        "api_gateway",
        "workspace_realizer",
        "runtime_supervisor",
        "heartbeat_controller",
        "git_credentials",
    ],
)
def test_a_service_imports_no_postgres_driver_and_no_cli_it_does_not_use(module: str) -> None:
    probe = _PROBE.format(module=module, left_out=_LEFT_OUT)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == []


def test_without_leaving_them_out_httpx_would_import_its_cli() -> None:
    """The probe can fail: plain ``import httpx`` does import what the services leave out."""
    probe = "import sys, httpx; print('rich.console' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "True"
