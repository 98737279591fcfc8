"""`clipyard up` as a user runs it, for the tests that need the real command: the whole stack on
embedded defaults in a home under the test's ``tmp_path``, its API, its CLI, and its end (every
runtime service it left is reaped, whatever the test did).

Shared by ``tests/e2e/test_clipyard_up.py`` and ``tests/chaos/``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import Stack
from tests.e2e.hostfacts import free_port, reap

__all__ = ["SERVICES", "Up", "UpStack", "restarts_shown", "running_up"]

SERVICES = (
    "api-gateway",
    "workspace-realizer",
    "runtime-supervisor",
    "heartbeat-controller",
    "git-credentials",
)
"""The five services `clipyard up` starts next to nats-server."""


_ROW = re.compile(r"^(?P<name>\S+) .*?(?P<restarts>\d+)  (?P<last>-|\d\d:\d\d:\d\d .*)$")
"""A process line: name, state, pid, uptime, restarts, then ``-`` or ``HH:MM:SS (...)``."""


def restarts_shown(status: str) -> dict[str, tuple[int, str]]:
    """``clipyard status``'s process table: name -> (restarts, the last restart column)."""
    table = status.split("runs:\n", 1)[1].splitlines()[1:]
    rows = (_ROW.match(line) for line in table)
    return {m["name"]: (int(m["restarts"]), m["last"]) for m in rows if m is not None}


@dataclass
class UpStack:
    """The API of a running `clipyard up`, as ``tests.e2e.runtimeutil.runtime_board`` uses a
    stack (the clients of ``tests.conftest.Stack``)."""

    api: str
    admin_key: str

    client = Stack.client
    admin = Stack.admin


@dataclass
class Up:
    """A running `clipyard up`: its process, environment, home, API root (``.../api``), log."""

    proc: subprocess.Popen[str]
    env: dict[str, str]
    home: Path
    api: str
    log: Path

    def wait_healthy(self, timeout: float = 90.0) -> dict[str, Any]:
        """``GET /api/health`` once it answers 200 (asserted within ``timeout``, `up` running)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"clipyard up exited early:\n{self.log.read_text()}"
            with contextlib.suppress(httpx.TransportError):
                health = httpx.get(f"{self.api}/health", timeout=2)
                if health.status_code == 200:
                    return dict(health.json())
            time.sleep(0.2)
        raise AssertionError(f"the stack never became healthy:\n{self.log.read_text()}")

    @property
    def stack(self) -> UpStack:
        """The API with the admin key `up` created."""
        key = (self.home / "admin.key").read_text().strip()
        return UpStack(api=self.api.removesuffix("/api"), admin_key=key)

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """``clipyard <args>`` with the stack's environment."""
        return subprocess.run(
            [sys.executable, "-m", "clipyard_cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def interrupt(self, timeout: float = 60) -> int:
        """Ctrl-C: SIGINT to `up`'s process group; its exit code."""
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.proc.wait(timeout)


@contextlib.contextmanager
def running_up(tmp_path: Path, **settings: str) -> Iterator[Up]:
    """Start `clipyard up` with a home under ``tmp_path``, free ports and ``settings``
    (``CLIPYARD_*`` variables); on exit SIGKILL its group if it still runs and reap the runtime
    services of its home."""
    home = tmp_path / "home"
    env = {
        **os.environ,
        "CLIPYARD_HOME": str(home),
        "CLIPYARD_NATS_URL": f"nats://127.0.0.1:{free_port()}",
        "CLIPYARD_HTTP_PORT": str(free_port()),
        **settings,
    }
    env.pop("CLIPYARD_ADMIN_KEY", None)
    log = tmp_path / "up.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "clipyard_cli", "up"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    api = f"http://127.0.0.1:{env['CLIPYARD_HTTP_PORT']}/api"
    try:
        yield Up(proc=proc, env=env, home=home, api=api, log=log)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        reap(home)  # runtime services outlive the supervisor: none may outlive a failed test
