"""Singleton work under a lease: one replica of a service does it, the others stand by.

Every replica of a service serves requests; the work that must happen once (the outbox relay, the
inboxes, a reaper, a dispatcher, start-up sweeps) runs on the instance holding the service's
lease, ``singleton`` in its own store (:mod:`eventstore.leases`). :class:`Leadership` is that
instance's side of it:

- it tries to take the lease at start and then every third of its time to live (TTL, 5 s by
  default); once granted it renews it on the same beat;
- on a grant it starts each :class:`LeaderWork` registered with :meth:`Leadership.add`, in
  order, inside the grant's fence (:func:`eventstore.fence.fenced`): every write the work makes,
  on any task it creates, is checked against the lease row in the write's own transaction;
- when a renewal is refused (the lease ran out while this instance was paused, and another took
  it) or no renewal succeeded for a whole TTL (the store is unreachable), it stops the work, in
  reverse order, and goes back to trying; a write the work makes meanwhile is refused by the fence;
- on stop it stops the work and releases the lease, so another replica takes it at its next try.

After the holder dies the lease runs out within one TTL and another replica's next try, at most a
third of a TTL later, takes it: handover within 4/3 TTL. A starting instance that finds the lease
held by an instance that is no longer on the bus takes it at once
(:meth:`Leadership.take_over_from`): a restart does not wait for its own old lease to run out.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from eventstore.fence import Fence, fenced

if TYPE_CHECKING:
    from eventstore.leases import LeaseRecord, LeaseTable

__all__ = ["DEFAULT_LEASE", "LeaderWork", "Leadership", "TaskWork"]

log = logging.getLogger(__name__)

DEFAULT_LEASE = "singleton"
"""The lease of a service's singleton work."""


class LeaderWork(Protocol):
    """Work that runs only while this instance holds the lease."""

    async def start(self) -> None:
        """Start (inside the grant's fence)."""
        ...

    async def stop(self, timeout: float) -> None:
        """Stop within ``timeout`` seconds."""
        ...


class TaskWork:
    """A coroutine run as a task while the lease is held; cancelled when it is lost."""

    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.name = name
        self._run = run
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the task (it inherits the fence of the caller's context)."""
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self, timeout: float) -> None:
        """Cancel the task and wait ``timeout`` seconds at most for it to end."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        await asyncio.wait({task}, timeout=max(timeout, 0.01))
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.error("leader work %s had failed", self.name, exc_info=task.exception())


@dataclass(frozen=True)
class _Named:
    name: str
    work: LeaderWork


class Leadership:
    """This instance's side of its service's lease, and the work it runs while it holds it."""

    def __init__(
        self,
        leases: LeaseTable,
        *,
        service: str,
        holder: str,
        ttl: float = 5.0,
        lease: str = DEFAULT_LEASE,
        alive: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        """
        Args:
            leases: The service store's lease table.
            service: The service name, for logs.
            holder: This instance's id (unique among the live instances of the service).
            ttl: The lease's time to live in seconds.
            lease: The lease's name.
            alive: ``await alive(instance)``: whether that instance is still on the bus; at
                start, a lease held by one that is not is taken over at once.
        """
        self.leases = leases
        self.service = service
        self.holder = holder
        self.ttl = ttl
        self.lease = lease
        self._alive = alive
        self.fence: Fence | None = None
        """The grant this instance works under (None: it stands by)."""
        self.leader: str | None = None
        """Who held the lease when this instance last looked (itself when it holds it)."""
        self.grants = 0
        """How many times this instance was granted the lease."""
        self._works: list[_Named] = []
        self._running: list[_Named] = []
        self._renewed = 0.0
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._changed = asyncio.Event()

    @property
    def held(self) -> bool:
        """Whether this instance holds the lease now."""
        return self.fence is not None

    @property
    def role(self) -> str:
        """``leader`` or ``standby`` (for ``clipyard status``)."""
        return "leader" if self.held else "standby"

    def add(self, name: str, work: LeaderWork) -> None:
        """Run ``work`` while the lease is held (started in the order added, stopped reversed)."""
        self._works.append(_Named(name, work))

    def add_task(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``await run()`` as a task while the lease is held."""
        self.add(name, TaskWork(name, run))

    async def start(self) -> None:
        """Try for the lease now (so a lone instance leads at once), then keep trying/renewing."""
        await self._beat()
        if not self.held and self._alive is not None:
            try:
                records = await asyncio.to_thread(self.leases.leases)
                for record in records:
                    if record.name == self.lease:
                        await self.take_over_from(record, self._alive)
            except Exception:
                log.warning("could not look at the lease's holder", exc_info=True)
        self._task = asyncio.create_task(self._loop(), name=f"leadership:{self.service}")

    async def stop(self, timeout: float) -> None:
        """Stop the work and release the lease (within ``timeout`` seconds)."""
        self._stopping.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=0.5)
        fence = self.fence
        await self._step_down("this instance stops", timeout * 0.8)
        if fence is not None:
            try:
                await asyncio.to_thread(
                    self.leases.release_lease, fence.lease, fence.holder, fence.token
                )
            except Exception:
                log.warning("could not release the lease; it runs out by itself", exc_info=True)

    async def wait_changed(self, timeout: float) -> None:
        """Wait until the lease is won or lost, ``timeout`` seconds at most (tests, status)."""
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)

    async def take_over_from(
        self, record: LeaseRecord, alive: Callable[[str], Awaitable[bool]]
    ) -> bool:
        """Take the lease from a holder that is not alive (``await alive(holder)`` is False).

        Safe even when wrong: a holder that was alive after all finds its token superseded and
        every write it tries refused by the fence.
        """
        if not record.live or record.holder == self.holder or await alive(record.holder):
            return False
        token = await asyncio.to_thread(
            self.leases.take_over_lease, self.lease, self.holder, self._ttl_ms(), record.token
        )
        if token is None:
            return False
        log.warning(
            "took the lease over from an instance no longer on the bus",
            extra={"service": self.service, "lease": self.lease, "previous": record.holder},
        )
        await self._step_up(token)
        return True

    def describe(self) -> dict[str, object]:
        """What ``$SRV.STATS`` shows of it."""
        return {
            "lease": self.lease,
            "role": self.role,
            "holder": self.holder,
            "leader": self.leader,
            "token": None if self.fence is None else self.fence.token,
            "ttl": self.ttl,
            "grants": self.grants,
        }

    # -- the beat ------------------------------------------------------------------------------

    def _ttl_ms(self) -> int:
        return max(1, round(self.ttl * 1000))

    async def _loop(self) -> None:
        while not self._stopping.is_set():
            await asyncio.sleep(self.ttl / 3)
            try:
                await self._beat()
            except asyncio.CancelledError:
                raise
            except Exception:  # never leaves the loop: the next beat tries again
                log.exception("lease beat failed", extra={"service": self.service})

    async def _beat(self) -> None:
        fence = self.fence
        if fence is None:
            await self._try_acquire()
            return
        try:
            renewed = await asyncio.to_thread(
                self.leases.renew_lease, fence.lease, fence.holder, fence.token, self._ttl_ms()
            )
        except Exception:
            log.warning("lease renewal failed", exc_info=True, extra={"service": self.service})
            if time.monotonic() - self._renewed >= self.ttl:
                await self._step_down("no renewal for a whole TTL", self.ttl / 3)
            return
        if renewed:
            self._renewed = time.monotonic()
        else:
            await self._step_down("the lease ran out and was refused renewal", self.ttl / 3)

    async def _try_acquire(self) -> None:
        try:
            token = await asyncio.to_thread(
                self.leases.acquire_lease, self.lease, self.holder, self._ttl_ms()
            )
        except Exception:
            log.warning("lease acquisition failed", exc_info=True, extra={"service": self.service})
            return
        if token is not None:
            await self._step_up(token)
            return
        records = await asyncio.to_thread(self.leases.leases)
        self.leader = next((r.holder for r in records if r.name == self.lease and r.live), None)

    async def _step_up(self, token: int) -> None:
        self._renewed = time.monotonic()
        fence = Fence(self.lease, self.holder, token)
        self.fence, self.leader = fence, self.holder
        self.grants += 1
        log.info(
            "lease granted: running the singleton work",
            extra={"service": self.service, "lease": self.lease, "fence_token": token},
        )
        context = contextvars.copy_context()
        await asyncio.create_task(self._start_works(fence), context=context)
        self._changed.set()

    async def _start_works(self, fence: Fence) -> None:
        with fenced(fence):
            for named in self._works:
                try:
                    await named.work.start()
                except Exception:
                    log.exception("leader work %s did not start", named.name)
                    continue
                self._running.append(named)

    async def _step_down(self, why: str, timeout: float) -> None:
        if self.fence is None:
            return
        token = self.fence.token
        self.fence = None
        running, self._running = self._running, []
        log_at = log.info if self._stopping.is_set() else log.warning
        log_at(
            "lease given up: singleton work stops",
            extra={"service": self.service, "lease": self.lease, "fence_token": token, "why": why},
        )
        share = timeout / max(1, len(running))
        for named in reversed(running):
            try:
                await named.work.stop(share)
            except Exception:
                log.exception("leader work %s did not stop cleanly", named.name)
        self._changed.set()
