"""The ``service_process`` fixture's factory: builds, starts and finally stops service processes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testkit.processes import ServiceProcess, ServiceStopError, service_name_of
from testkit.readiness import ReadyCheck

__all__ = ["ServiceProcessFactory"]


class ServiceProcessFactory:
    """What the ``service_process`` fixture yields: ``await factory(module=..., env=...)``.

    Args:
        base_env: The environment every service gets (``os.environ`` plus ``CLIPYARD_HOME`` and
            ``CLIPYARD_NATS_URL`` of the fixtures); ``env=`` of a call goes on top.
        log_dir: Where the per-process log files go.
    """

    def __init__(self, *, base_env: Mapping[str, str], log_dir: Path) -> None:
        self.base_env = dict(base_env)
        self.log_dir = log_dir
        self.processes: list[ServiceProcess] = []

    def prepare(
        self,
        module: str,
        *,
        env: Mapping[str, str] | None = None,
        ready_subject: str | None = None,
        ready: ReadyCheck | None = None,
        name: str | None = None,
        timeout: float = 30.0,
        check_exit_code: bool = True,
    ) -> ServiceProcess:
        """Build (without starting) a service process tracked by this factory.

        Args:
            module: The module run with ``python -m`` (``"workspace_realizer"``).
            env: Extra environment, on top of the base one.
            ready_subject: The subject whose reply means ready; ``$SRV.PING.<name>`` by default.
            ready: A readiness check used instead of the NATS request.
            name: The micro service name; derived from the module by default.
            timeout: Seconds to wait for readiness.
            check_exit_code: Whether stopping must end with exit code 0.

        Returns:
            The process, not started.
        """
        service = ServiceProcess(
            module,
            env={**self.base_env, **(env or {})},
            log_path=self.log_dir / f"{name or service_name_of(module)}-{len(self.processes)}.log",
            name=name,
            ready_subject=ready_subject,
            ready=ready,
            start_timeout=timeout,
            check_exit_code=check_exit_code,
        )
        self.processes.append(service)
        return service

    async def __call__(self, module: str, **options: Any) -> ServiceProcess:
        """Start a service and wait until it is ready (options as :meth:`prepare`).

        Args:
            module: The module run with ``python -m``.
            **options: As for :meth:`prepare`.

        Returns:
            The ready process.
        """
        return await self.prepare(module, **options).start()

    def sync(self, module: str, **options: Any) -> ServiceProcess:
        """Blocking variant of calling the factory, for sync tests.

        Args:
            module: The module run with ``python -m``.
            **options: As for :meth:`prepare`.

        Returns:
            The ready process.
        """
        return self.prepare(module, **options).start_sync()

    def stop_all(self) -> list[str]:
        """Terminate every process still running (SIGTERM, 5 s each, SIGKILL after).

        Returns:
            One message per process that did not stop cleanly.
        """
        problems: list[str] = []
        for service in reversed(self.processes):
            try:
                service.terminate_sync()
            except ServiceStopError as error:
                problems.append(str(error))
        homes = {
            s.env["CLIPYARD_HOME"]
            for s in self.processes
            if s.module == "runtime_supervisor" and s.env.get("CLIPYARD_HOME")
        }
        for home in sorted(homes):
            end_contained(home)
        return problems


def end_contained(home: str) -> None:
    """End what a supervisor of ``home`` left on the host beyond its services: relays, network
    namespaces, resource units (they outlive the supervisor by design)."""
    subprocess.run(
        [sys.executable, "-m", "runtime_supervisor.adapters.containment.cleanup", home],
        check=False,
        timeout=60,
        capture_output=True,
    )
