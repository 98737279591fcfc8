"""One process of the local stack, kept running: started again, with backoff, whenever it exits.

A :class:`Keeper` starts its process (``launch``) and, once :meth:`Keeper.keep` runs, watches it:
while it is ``starting`` it asks ``ready`` whether it answers yet (then it is ``up``, and after a
restart ``clipyard up`` says it is back); when it exits, for whatever reason, it says how (exit
code or signal, and the end of its log on the first exit of a streak), waits the backoff of
:mod:`clipyard_cli.restarts` and starts it again, the same way, for as long as ``keep`` runs. A
crash loop is announced once and then retried at the longest backoff; nothing here ever gives up
or stops anything else. Every change of state goes to ``changed`` (``clipyard up`` records it in
``run/stack.json`` for ``clipyard status``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from clipyard_cli.probes import describe_exit, format_duration
from clipyard_cli.restarts import ExitStreak, RestartPolicy
from clipyard_cli.runstate import ProcessRecord, ProcessState
from clipyard_cli.stack import ManagedProcess, StackError

__all__ = ["Keeper"]

Ready = Callable[[ManagedProcess], Awaitable[str | None]]
"""Whether a started process answers yet: how it does (``answers ping``), or None."""

_POLL = 0.2
_TAIL_LINES = 8


class Keeper:
    """A process ``clipyard up`` keeps running, and how often it had to start it again."""

    def __init__(
        self,
        name: str,
        launch: Callable[[], ManagedProcess],
        *,
        ready: Ready,
        say: Callable[[str], None],
        changed: Callable[[], None],
        hint: str = "",
        policy: RestartPolicy | None = None,
    ) -> None:
        """Prepare (nothing starts before :meth:`start`).

        Args:
            name: The process's name (``nats-server``, ``workspace-realizer``).
            launch: Starts the process (the same way every time).
            ready: Whether a started process answers yet.
            say: Prints one line of progress.
            changed: Called after every change of what :meth:`record` returns.
            hint: Appended to the line saying it exited (what that means for the rest).
            policy: The backoff (default: :class:`RestartPolicy`'s).
        """
        self.name = name
        self.launch = launch
        self.ready = ready
        self.say = say
        self.changed = changed
        self.hint = hint
        self.streak = ExitStreak(policy or RestartPolicy())
        self.process: ManagedProcess | None = None
        self.state: ProcessState = "starting"
        self.started: float | None = None
        self.restarts = 0
        self.last_restart: float | None = None
        self.last_exit: str | None = None
        self.next_start: float | None = None
        self._since = 0.0
        self._start_error = ""
        self._loop_announced = False

    def start(self) -> ManagedProcess:
        """Start the process (raises whatever ``launch`` raises)."""
        self.process = self.launch()
        self.state = "starting"
        self.started = time.time()
        self._since = time.monotonic()
        self.next_start = None
        self.changed()
        return self.process

    def mark_up(self) -> None:
        """The process answers (``clipyard up``'s own start checked it)."""
        self.state = "up"
        self.changed()

    def record(self) -> ProcessRecord:
        """What ``run/stack.json`` holds of this process now."""
        return ProcessRecord(
            pid=self.process.pid if self.process is not None else None,
            started=self.started if self.process is not None else None,
            state=self.state,
            restarts=self.restarts,
            last_restart=self.last_restart,
            last_exit=self.last_exit,
            next_start=self.next_start,
            crash_loop=self.streak.crash_loop,
        )

    async def keep(self) -> None:
        """Watch the process and start it again whenever it exits, until cancelled."""
        while True:
            process = self.process
            if process is not None:
                await self._until_exit(process)
                ended = describe_exit(process.popen.returncode)
                gone = f"{self.name} (pid {process.pid}) exited ({ended})"
            else:
                ended = self._start_error
                gone = f"{self.name} could not start ({ended})"
            delay = self._exited(ended)
            self._announce(gone, process, delay)
            await asyncio.sleep(delay)
            self._start_again()

    async def _until_exit(self, process: ManagedProcess) -> None:
        while process.alive():
            if self.state == "starting":
                how = await self.ready(process)
                if how is not None and process.alive():
                    self.state = "up"
                    self.changed()
                    if self.restarts:
                        self.say(f"{self.name} is back (pid {process.pid}, {how})")
            looping = self.streak.crash_loop
            if self.streak.stayed_up(time.monotonic() - self._since):
                self._loop_announced = False
                self.changed()
                if looping:
                    uptime = format_duration(self.streak.policy.stable_after)
                    self.say(f"{self.name} has stayed up {uptime}: its crash loop is over")
            await asyncio.sleep(_POLL)

    def _exited(self, ended: str) -> float:
        """Count the exit; returns the wait before the next start."""
        now = time.monotonic()
        delay = self.streak.exited(now, now - self._since)
        self.process = None
        self.state = "restarting"
        self.last_exit = ended
        self.next_start = time.time() + delay
        self.changed()
        return delay

    def _announce(self, gone: str, process: ManagedProcess | None, delay: float) -> None:
        see = f" (see {process.log_path})" if process is not None else ""
        if self.streak.crash_loop and not self._loop_announced:
            self._loop_announced = True
            policy = self.streak.policy
            self.say(
                f"{gone}: {self.streak.count} exits in a row within "
                f"{format_duration(policy.loop_window)}, a crash loop; restarting it every "
                f"{policy.max_delay:g} s until it stays up {format_duration(policy.stable_after)}"
                f"{self.hint}{_tail(process)}"
            )
            return
        if self.streak.crash_loop:
            self.say(f"{gone}: still in a crash loop; restarting it in {delay:g} s{see}")
            return
        uptime = f" after {format_duration(time.monotonic() - self._since)}" if process else ""
        tail = _tail(process) if self.streak.count == 1 else ""
        self.say(f"{gone}{uptime}; restarting it in {delay:g} s{self.hint}{tail}")

    def _start_again(self) -> None:
        self.restarts += 1
        self.last_restart = time.time()
        try:
            process = self.start()
        except (OSError, StackError) as exc:
            self.process = None
            self._since = time.monotonic()
            self._start_error = str(exc) or type(exc).__name__
            return
        self.say(f"restarted {self.name} (pid {process.pid}, restart {self.restarts})")


def _tail(process: ManagedProcess | None) -> str:
    """The end of the process's log, indented, after a newline (empty without a log)."""
    if process is None:
        return ""
    lines = process.log_tail(_TAIL_LINES).splitlines()
    if not lines:
        return ""
    shown = "\n".join(f"    | {line}" for line in lines)
    return f"\n  its log ({process.log_path}) ends with:\n{shown}"
