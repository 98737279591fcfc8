"""The running local stack: start NATS and the services, watch them, stop them in order."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Mapping
from typing import TextIO

from nats.aio.client import Client

from clipyard_cli.bus import CLI_PRINCIPAL, BusLogin, connect_cli, ping_service
from clipyard_cli.home import CLI_USER
from clipyard_cli.leftovers import stop_leftover_services
from clipyard_cli.probes import (
    StackSettings,
    describe_exit,
    http_get,
    reachable,
    require_free_port,
)
from clipyard_cli.runstate import write_processes
from clipyard_cli.stack import (
    SERVICE_LAUNCHES,
    ManagedProcess,
    StackError,
    find_nats_config,
    find_nats_server,
    service_env,
    spawn,
    start_nats_server,
    stop_process,
)
from contracts import subjects
from contracts.base import ErrorReply, Ok
from contracts.service import StopAllRuntimeServices
from natsbus.client import BusClient

__all__ = ["LocalStack"]


class LocalStack:
    """NATS and the five services of one ``clipyard up``."""

    def __init__(
        self,
        settings: StackSettings,
        env: Mapping[str, str],
        *,
        passwords: Mapping[str, str],
        admin_key: str,
        out: TextIO | None = None,
    ) -> None:
        """Prepare (nothing starts before :meth:`start`)."""
        self.settings = settings
        self.env = dict(env)
        self.passwords = dict(passwords)
        self.admin_key = admin_key
        self.out = sys.stdout if out is None else out
        self.nats: ManagedProcess | None = None
        self.services: dict[str, ManagedProcess] = {}
        self.nc: Client | None = None

    async def start(self) -> None:
        """Start NATS, then each service; return once all answer ping and health is 200.

        Raises:
            StackError: Something did not start; its log tail is in the message.
        """
        s = self.settings
        config = find_nats_config(self.env)
        binary = find_nats_server()
        require_free_port(s.nats_host, s.nats_port, "CLIPYARD_NATS_URL")
        require_free_port(s.http_host, s.http_port, "CLIPYARD_HTTP_PORT")
        self._say(f"starting nats-server ({binary}) with {config}")
        self.nats = start_nats_server(
            binary=binary,
            config=config,
            home=s.home,
            passwords=self.passwords,
            host=s.nats_host,
            port=s.nats_port,
            base_env=self.env,
        )
        self._record()
        await self._wait_for_port(self.nats, reachable(s.nats_host), s.nats_port)
        login = BusLogin(url=s.nats_url, user=CLI_USER, password=self.passwords[CLI_USER])
        self.nc = await connect_cli(login, initial_wait=10.0)
        for launch in SERVICE_LAUNCHES:
            if launch.name in s.skip:
                self._say(f"not starting {launch.name} (--skip)")
                continue
            env = service_env(
                self.env,
                launch,
                home=s.home,
                nats_url=s.nats_url,
                password=self.passwords[launch.token],
                admin_key=self.admin_key,
            )
            self._say(f"starting {launch.name}")
            argv = [sys.executable, "-m", launch.module]
            self.services[launch.name] = spawn(launch.name, argv, env, s.home)
            self._record()
        await self._wait_until_ready()

    async def watch(self, stopping: asyncio.Event) -> bool:
        """Report services that exit while running; False if NATS itself died."""
        reported: set[str] = set()
        while not stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=1.0)
            if self.nats is not None and not self.nats.alive():
                self._say(
                    f"nats-server exited ({self.nats.popen.returncode}); stopping\n{self.nats.log_tail()}"
                )
                return False
            for name, process in self.services.items():
                if name not in reported and not process.alive():
                    reported.add(name)
                    self._say(
                        f"{name} exited with code {process.popen.returncode}; see {process.log_path}"
                    )
        return True

    async def shutdown(self) -> None:
        """Stop-all, then each service in reverse start order, then NATS."""
        if self.nats is None and not self.services:
            return
        self._say("stopping")
        await self._stop_all()
        # Whatever the supervisor could not stop (it is dead, did not answer, or left
        # survivors) is stopped here: Ctrl-C leaves nothing.
        left = await asyncio.to_thread(stop_leftover_services, self.settings.home)
        if left:
            self._say(f"stopped {len(left)} runtime service(s) the supervisor left running")
        for launch in reversed(SERVICE_LAUNCHES):
            process = self.services.pop(launch.name, None)
            if process is not None:
                code = await asyncio.to_thread(stop_process, process)
                self._say(f"stopped {launch.name} ({describe_exit(code)})")
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await self.nc.close()
            self.nc = None
        if self.nats is not None:
            code = await asyncio.to_thread(stop_process, self.nats)
            self._say(f"stopped nats-server ({describe_exit(code)})")
            self.nats = None
        self._say("Clipyard stopped.")

    async def _stop_all(self) -> None:
        supervisor = self.services.get("runtime-supervisor")
        if (
            self.nc is None
            or not self.nc.is_connected
            or supervisor is None
            or not supervisor.alive()
        ):
            return
        node = self.settings.node_id
        subject = subjects.command("runtime_service", "stop_all", node)
        reply = await BusClient(self.nc).request(
            subject,
            StopAllRuntimeServices(principal=CLI_PRINCIPAL, node=node),
            timeout=self.settings.stop_all_timeout,
        )
        match reply:
            case Ok(result=dict() as result):
                self._say(
                    f"runtime services stopped: {result.get('servicesStopped', 0)}, "
                    f"slots stopped: {result.get('slotsStopped', 0)}"
                )
            case ErrorReply(code="service_unavailable"):
                self._say(f"no runtime-supervisor answers stop-all on node {node} yet")
            case ErrorReply(code=code, message=message):
                self._say(f"stop-all on node {node} failed ({code}): {message}")
            case _:
                self._say(f"stop-all on node {node}: {reply!r}")

    async def _wait_for_port(self, process: ManagedProcess, host: str, port: int) -> None:
        deadline = time.monotonic() + self.settings.ready_timeout
        while time.monotonic() < deadline:
            self._check_alive(process)
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection(host, port)
                writer.close()
                await writer.wait_closed()
                return
            await asyncio.sleep(0.05)
        raise StackError(f"{process.name} did not listen on {host}:{port}\n{process.log_tail()}")

    async def _wait_until_ready(self) -> None:
        assert self.nc is not None
        deadline = time.monotonic() + self.settings.ready_timeout
        waiting = dict(self.services)
        while waiting:
            for name, process in list(waiting.items()):
                self._check_alive(process)
                ping = await ping_service(self.nc, name, timeout=0.5)
                if ping is not None:
                    self._say(f"{name} {ping.version} answers ping ({ping.latency_ms:.1f} ms)")
                    del waiting[name]
            if waiting and time.monotonic() > deadline:
                names = ", ".join(waiting)
                tails = "\n".join(f"--- {p.log_path}\n{p.log_tail()}" for p in waiting.values())
                raise StackError(f"no ping answer from {names}\n{tails}")
            await asyncio.sleep(0.1 if waiting else 0)
        gateway = self.services.get("api-gateway")
        if gateway is None:
            return
        # With a service skipped, health answers 503 (degraded) until it runs elsewhere.
        accepted = {200} if not self.settings.skip else {200, 503}
        health = f"{self.settings.api_url}/health"
        last = ""
        while time.monotonic() < deadline:
            self._check_alive(gateway)
            status, last = await asyncio.to_thread(http_get, health)
            if status in accepted:
                self._say(f"GET {health}: {status}")
                return
            await asyncio.sleep(0.2)
        raise StackError(f"GET {health} did not answer 200 in time; last answer: {last}")

    def _check_alive(self, process: ManagedProcess) -> None:
        if not process.alive():
            raise StackError(
                f"{process.name} exited with code {process.popen.returncode} while starting; "
                f"its log ({process.log_path}) ends with:\n{process.log_tail()}"
            )

    def _record(self) -> None:
        processes = {name: p.pid for name, p in self.services.items()}
        if self.nats is not None:
            processes["nats-server"] = self.nats.pid
        write_processes(self.settings.home, processes)

    def _say(self, text: str) -> None:
        print(f"clipyard: {text}", file=self.out, flush=True)
