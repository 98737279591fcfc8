"""The running local stack: start NATS (unless it is external: :mod:`clipyard_cli.natsmode`) and
the services, keep them running, stop them in order.

Once everything answers, each process has a :class:`~clipyard_cli.keeper.Keeper` that starts it
again, with backoff, whenever it exits: nats-server on the same address, configuration and store
folder (JetStream's file store keeps ``WS_EVENTS``; the services reconnect by themselves), a
service with the same environment. A crash never stops anything else: only :meth:`LocalStack.
shutdown` (Ctrl-C or SIGTERM of ``clipyard up``) sends the stop-all that ends runtime services.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TextIO

import nats.errors
from nats.aio.client import Client

from clipyard_cli.bus import BusLogin, connect_cli, ping_service, stop_all_runtime
from clipyard_cli.home import CLI_USER
from clipyard_cli.keeper import Keeper
from clipyard_cli.leftovers import stop_leftover_services
from clipyard_cli.natsmode import NO_ANSWER_FIX
from clipyard_cli.probes import (
    StackSettings,
    describe_exit,
    http_get,
    port_answers,
    reachable,
    require_free_port,
)
from clipyard_cli.restarts import RestartPolicy
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
from natsbus.connection import NatsConnectError, redact_url

__all__ = ["LocalStack"]

NATS = "nats-server"
_HINTS = {
    NATS: "; the services reconnect to it by themselves and runtime services keep running",
    "runtime-supervisor": "; its runtime services keep running and the new one adopts them",
}
"""What an exit of these means for the rest, said with it."""


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
        policy: RestartPolicy | None = None,
    ) -> None:
        """Prepare (nothing starts before :meth:`start`).

        Args:
            settings: Where the stack lives and listens.
            env: The caller's environment (the services' environments derive from it).
            passwords: Every NATS user's password (empty: an external NATS without
                authorization, where everyone connects without a user).
            admin_key: The gateway's admin key.
            out: Where to print progress.
            policy: When to restart a process that exited (default: :class:`RestartPolicy`'s).
        """
        self.settings = settings
        self.env = dict(env)
        self.passwords = dict(passwords)
        self.admin_key = admin_key
        self.out = sys.stdout if out is None else out
        self.policy = policy or RestartPolicy()
        self.keepers: dict[str, Keeper] = {}
        """nats-server first, then the services in start order."""
        self.nc: Client | None = None

    @property
    def nats(self) -> ManagedProcess | None:
        """The running nats-server (None before the start and while it waits for a restart)."""
        keeper = self.keepers.get(NATS)
        return keeper.process if keeper is not None else None

    @property
    def services(self) -> dict[str, ManagedProcess]:
        """The running services by name (one waiting for its restart is not among them)."""
        return {
            name: keeper.process
            for name, keeper in self.keepers.items()
            if name != NATS and keeper.process is not None
        }

    async def start(self) -> None:
        """Start NATS (unless it is external), then each service; return once all answer ping
        and health is 200.

        Raises:
            StackError: Something did not start (its log tail is in the message), or no server
                of an external NATS answers.
        """
        s = self.settings
        require_free_port(s.http_host, s.http_port, "CLIPYARD_HTTP_PORT")
        if not s.nats_external:
            await self._start_nats()
        else:
            self._say(f"using the external NATS {redact_url(s.nats_url)}: starting no nats-server")
        self.nc = await self._connect()
        for launch in SERVICE_LAUNCHES:
            if launch.name in s.skip:
                self._say(f"not starting {launch.name} (--skip)")
                continue
            env = service_env(
                self.env,
                launch,
                home=s.home,
                nats_url=s.nats_url,
                password=self.passwords.get(launch.token),
                admin_key=self.admin_key,
            )
            self._say(f"starting {launch.name}")
            argv = [sys.executable, "-m", launch.module]
            start = functools.partial(spawn, launch.name, argv, env, s.home)
            self._keeper(launch.name, start, self._pings).start()
        await self._wait_until_ready()
        for keeper in self.keepers.values():
            keeper.mark_up()

    async def _start_nats(self) -> None:
        """Start the stack's own nats-server and wait until it listens."""
        s = self.settings
        config = find_nats_config(self.env)
        binary = find_nats_server()
        require_free_port(s.nats_host, s.nats_port, "CLIPYARD_NATS_URL")
        self._say(f"starting nats-server ({binary}) with {config}")
        launch_nats = functools.partial(
            start_nats_server,
            binary=binary,
            config=config,
            home=s.home,
            passwords=self.passwords,
            host=s.nats_host,
            port=s.nats_port,
            base_env=self.env,
        )
        nats_process = self._keeper(NATS, launch_nats, self._nats_ready).start()
        await self._wait_for_port(nats_process, reachable(s.nats_host), s.nats_port)
        self.keepers[NATS].mark_up()

    async def _connect(self) -> Client:
        """The CLI's connection: user ``cli`` (none if the external NATS has no authorization)."""
        s, password = self.settings, self.passwords.get(CLI_USER)
        login = BusLogin(url=s.nats_url, user=CLI_USER if password else None, password=password)
        try:
            return await connect_cli(login, initial_wait=min(10.0, s.ready_timeout))
        except NatsConnectError as exc:
            if not s.nats_external:
                raise
            raise StackError(
                f"no server of the external NATS answers: {exc}. {NO_ANSWER_FIX}"
            ) from None

    async def watch(self, stopping: asyncio.Event) -> None:
        """Keep every process running until ``stopping`` is set.

        A process that exits is started again with backoff (:class:`Keeper`); nothing else is
        stopped or told, and this never returns before ``stopping``.
        """
        tasks = []
        for name, keeper in self.keepers.items():
            task = asyncio.create_task(keeper.keep(), name=f"keep {name}")
            task.add_done_callback(self._report_failure)
            tasks.append(task)
        try:
            await stopping.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def shutdown(self) -> None:
        """Stop-all, then each service in reverse start order, then NATS.

        Call it after :meth:`watch` returned (no keeper restarts anything any more).
        """
        if not self.keepers:
            return
        self._say("stopping")
        await self._stop_all()
        # Whatever the supervisor could not stop (it is dead, did not answer, or left
        # survivors) is stopped here: Ctrl-C leaves nothing.
        left = await asyncio.to_thread(stop_leftover_services, self.settings.home)
        if left:
            self._say(f"stopped {len(left)} runtime service(s) the supervisor left running")
        for launch in reversed(SERVICE_LAUNCHES):
            await self._stop(launch.name)
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await self.nc.close()
            self.nc = None
        await self._stop(NATS)
        self.keepers.clear()
        self._say("Clipyard stopped.")

    async def _stop(self, name: str) -> None:
        keeper = self.keepers.get(name)
        if keeper is None or keeper.process is None:
            return
        process, keeper.process = keeper.process, None
        code = await asyncio.to_thread(stop_process, process)
        self._say(f"stopped {name} ({describe_exit(code)})")

    async def _stop_all(self) -> None:
        supervisor = self.services.get("runtime-supervisor")
        if (
            self.nc is None
            or not self.nc.is_connected
            or supervisor is None
            or not supervisor.alive()
        ):
            return
        s = self.settings
        self._say(await stop_all_runtime(self.nc, s.node_id, timeout=s.stop_all_timeout))

    async def _wait_for_port(self, process: ManagedProcess, host: str, port: int) -> None:
        deadline = time.monotonic() + self.settings.ready_timeout
        while time.monotonic() < deadline:
            self._check_alive(process)
            if await port_answers(host, port):
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

    def _report_failure(self, task: asyncio.Task[None]) -> None:
        """A keeper that failed (a bug) no longer restarts its process: say so, loudly."""
        if not task.cancelled() and task.exception() is not None:
            self._say(f"{task.get_name()} failed, no longer restarting it: {task.exception()!r}")

    def _keeper(
        self,
        name: str,
        launch: Callable[[], ManagedProcess],
        ready: Callable[[ManagedProcess], Awaitable[str | None]],
    ) -> Keeper:
        keeper = Keeper(
            name,
            launch,
            ready=ready,
            say=self._say,
            changed=self._record,
            hint=_HINTS.get(name, ""),
            policy=self.policy,
        )
        self.keepers[name] = keeper
        return keeper

    async def _nats_ready(self, process: ManagedProcess) -> str | None:
        """Whether the restarted nats-server listens again."""
        host, port = reachable(self.settings.nats_host), self.settings.nats_port
        return f"listening on {host}:{port}" if await port_answers(host, port) else None

    async def _pings(self, process: ManagedProcess) -> str | None:
        """Whether the restarted service answers its micro ping."""
        if self.nc is None or not self.nc.is_connected:
            return None
        try:
            ping = await ping_service(self.nc, process.name, timeout=0.5)
        except nats.errors.Error:
            return None
        return None if ping is None else f"answers ping in {ping.latency_ms:.1f} ms"

    def _check_alive(self, process: ManagedProcess) -> None:
        if not process.alive():
            raise StackError(
                f"{process.name} exited with code {process.popen.returncode} while starting; "
                f"its log ({process.log_path}) ends with:\n{process.log_tail()}"
            )

    def _record(self) -> None:
        records = {name: keeper.record() for name, keeper in self.keepers.items()}
        write_processes(self.settings.home, records)

    def _say(self, text: str) -> None:
        print(f"clipyard: {text}", file=self.out, flush=True)
