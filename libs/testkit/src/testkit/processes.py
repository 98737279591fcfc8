"""Service processes for integration and end-to-end tests.

A service runs as ``python -m <module>`` in its own session, with its output in a log file, and
counts as started when it answers a NATS micro ping (``$SRV.PING.<service-name>``) or when a
given readiness check holds. Stopping it means SIGTERM and an exit within 5 s (graceful
shutdown is part of every service's contract); ``kill()`` is SIGKILL, for crash tests.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from natsbus.urls import DEFAULT_NATS_URL
from testkit.procutil import parent_death_signal, tail
from testkit.readiness import PingCheck, ReadyCheck, holds

__all__ = [
    "STOP_TIMEOUT",
    "ServiceProcess",
    "ServiceStartError",
    "ServiceStopError",
    "service_name_of",
]

STOP_TIMEOUT = 5.0
_T = TypeVar("_T")


class ServiceStartError(RuntimeError):
    """The service exited or did not become ready in time."""


class ServiceStopError(AssertionError):
    """The service did not stop within the timeout, or stopped with a non-zero exit code."""


def service_name_of(module: str) -> str:
    """Return the micro service name of a service module (``workspace_realizer`` → ``workspace-realizer``).

    Args:
        module: The module run with ``python -m``.

    Returns:
        The service name.
    """
    return module.split(".")[0].replace("_", "-")


def _run_sync(make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run a coroutine to completion from sync code, even inside a running event loop."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


class ServiceProcess:
    """One service subprocess: ``pid``, ``logs()``, ``terminate()``, ``kill()``, ``restart()``."""

    def __init__(
        self,
        module: str,
        *,
        env: Mapping[str, str],
        log_path: Path,
        name: str | None = None,
        ready_subject: str | None = None,
        ready: ReadyCheck | None = None,
        start_timeout: float = 30.0,
        check_exit_code: bool = True,
    ) -> None:
        self.module = module
        self.name = name or service_name_of(module)
        self.env = dict(env)
        self.log_path = log_path
        self.ready_subject = ready_subject or f"$SRV.PING.{self.name}"
        self.ready = ready
        self.start_timeout = start_timeout
        self.check_exit_code = check_exit_code
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """The process id of the current (or last) run."""
        if self.process is None:
            msg = f"{self.name} was never started"
            raise RuntimeError(msg)
        return self.process.pid

    @property
    def running(self) -> bool:
        """Whether the process is still alive."""
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit code of the last run (None while running; ``-N`` when killed by signal N)."""
        return None if self.process is None else self.process.poll()

    def logs(self) -> str:
        """Return everything the service wrote to stdout and stderr (all runs).

        Returns:
            The log text.
        """
        return tail(self.log_path, limit=10_000_000)

    def spawn(self) -> None:
        """Start the process without waiting for readiness."""
        if self.running:
            msg = f"{self.name} is already running (pid {self.pid})"
            raise RuntimeError(msg)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", self.module],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=parent_death_signal(signal.SIGTERM),
            )

    async def start(self) -> ServiceProcess:
        """Start the process and wait until it is ready.

        Returns:
            This process.

        Raises:
            ServiceStartError: It exited, or was not ready within ``start_timeout`` (it is then
                killed); the message ends with its log.
        """
        self.spawn()
        await self.wait_ready()
        return self

    def start_sync(self) -> ServiceProcess:
        """Blocking :meth:`start`.

        Returns:
            This process.
        """
        self.spawn()
        _run_sync(self.wait_ready)
        return self

    async def wait_ready(self) -> None:
        """Wait until the readiness check holds (default: the service answers its micro ping).

        Raises:
            ServiceStartError: The process exited or the timeout passed.
        """
        deadline = time.monotonic() + self.start_timeout
        check = self.ready or self._ping_check()
        try:
            while True:
                if not self.running:
                    self._start_failed(f"exited with code {self.returncode} before it was ready")
                if await holds(check):
                    return
                if time.monotonic() >= deadline:
                    self.kill()
                    self._start_failed(f"not ready within {self.start_timeout:.0f} s (killed)")
                await asyncio.sleep(0.05)
        finally:
            closer = getattr(check, "aclose", None)
            if closer is not None:
                await closer()

    def _start_failed(self, what: str) -> None:
        msg = f"service {self.name} ({self.module}) {what}; log {self.log_path}:\n{tail(self.log_path)}"
        raise ServiceStartError(msg)

    def _ping_check(self) -> PingCheck:
        return PingCheck(
            url=self.env.get("CLIPYARD_NATS_URL") or DEFAULT_NATS_URL,
            user=self.env.get("CLIPYARD_NATS_USER") or None,
            password=self.env.get("CLIPYARD_NATS_PASSWORD") or None,
            subject=self.ready_subject,
        )

    def send_signal(self, sig: signal.Signals) -> None:
        """Send a signal to the service process (not its children).

        Args:
            sig: The signal.
        """
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def _after_stop(self, code: int, in_time: bool, timeout: float, check: bool) -> int:
        if not in_time:
            msg = f"service {self.name} did not exit within {timeout:.1f} s of SIGTERM (SIGKILLed):\n{tail(self.log_path)}"
            raise ServiceStopError(msg)
        if check and code != 0:
            msg = (
                f"service {self.name} exited with code {code} after SIGTERM:\n{tail(self.log_path)}"
            )
            raise ServiceStopError(msg)
        return code

    async def terminate(self, timeout: float = STOP_TIMEOUT, *, check: bool | None = None) -> int:
        """SIGTERM the service and wait for it to exit (SIGKILL after ``timeout``).

        Args:
            timeout: Seconds the service has to exit.
            check: Require exit code 0 (default: the process's ``check_exit_code``).

        Returns:
            The exit code.

        Raises:
            ServiceStopError: It did not exit in time, or exited non-zero while checked.
        """
        if not self.running:
            return self.returncode if self.returncode is not None else 0
        process = self.process
        assert process is not None
        self.send_signal(signal.SIGTERM)
        try:
            code, in_time = await asyncio.to_thread(process.wait, timeout), True
        except subprocess.TimeoutExpired:
            code, in_time = self.kill(), False
        return self._after_stop(
            code, in_time, timeout, self.check_exit_code if check is None else check
        )

    def terminate_sync(self, timeout: float = STOP_TIMEOUT, *, check: bool | None = None) -> int:
        """Blocking :meth:`terminate`.

        Args:
            timeout: Seconds the service has to exit.
            check: Require exit code 0 (default: the process's ``check_exit_code``).

        Returns:
            The exit code.
        """
        if self.process is None or not self.running:
            return self.returncode if self.returncode is not None else 0
        self.send_signal(signal.SIGTERM)
        try:
            code, in_time = self.process.wait(timeout), True
        except subprocess.TimeoutExpired:
            code, in_time = self.kill(), False
        return self._after_stop(
            code, in_time, timeout, self.check_exit_code if check is None else check
        )

    def kill(self) -> int:
        """SIGKILL the service (a crash: nothing is flushed) and reap it.

        Returns:
            The exit code (``-9`` when it was still running).
        """
        if self.process is None:
            msg = f"{self.name} was never started"
            raise RuntimeError(msg)
        self.send_signal(signal.SIGKILL)
        return self.process.wait()

    async def restart(self) -> ServiceProcess:
        """Terminate (when running) and start again with the same settings, waiting for readiness.

        Returns:
            This process.
        """
        await self.terminate()
        return await self.start()

    def restart_sync(self) -> ServiceProcess:
        """Blocking :meth:`restart`.

        Returns:
            This process.
        """
        self.terminate_sync()
        return self.start_sync()
