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

The work starts in a task of its own while the beat goes on (a slow start, such as the controller
re-attaching its runs, never keeps the lease from being renewed); a work that fails to start gives
the lease up, so another replica (or this one, at a later beat) tries. A fenced write refused
anywhere (:func:`eventstore.fence.on_refusal`) wakes the beat at once. The work stops inside the
grant's fence too: what it writes while stopping is refused once the lease has moved on.

After the holder dies the lease runs out within one TTL and another replica's next try, at most a
third of a TTL later, takes it: handover within 4/3 TTL. A starting instance that finds the lease
held by an instance that neither answers on the bus nor renews the lease while it watches (a third
of a TTL) takes it at once (:meth:`Leadership.take_over_from`): a restart does not wait for its own
old lease to run out, and a holder that is stopping (silent on the bus, still renewing) keeps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from eventstore.fence import Fence, fenced, on_refusal
from servicekit.leader_work import LeaderWork, NamedWork, TaskWork

if TYPE_CHECKING:
    from eventstore.leases import LeaseRecord, LeaseTable

__all__ = ["DEFAULT_LEASE", "LeaderWork", "Leadership", "TaskWork"]


log = logging.getLogger(__name__)

DEFAULT_LEASE = "singleton"
"""The lease of a service's singleton work."""


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
            alive: ``await alive(instance)``: whether that instance is still on the bus (True
                when it cannot tell); at start, a lease held by one that is not, and that is
                not renewed either, is taken over at once.
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
        self._works: list[NamedWork] = []
        self._running: list[NamedWork] = []
        self._starting: asyncio.Task[None] | None = None
        self._last_fence: Fence | None = None
        self._start_failed: str | None = None
        self._renewed = 0.0
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._poke = asyncio.Event()
        self._unlisten: Callable[[], None] | None = None

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
        self._works.append(NamedWork(name, work))

    def add_task(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``await run()`` as a task while the lease is held."""
        self.add(name, TaskWork(name, run))

    async def start(self) -> None:
        """Try for the lease now (so a lone instance leads at once), then keep trying/renewing."""
        loop = asyncio.get_running_loop()

        def refused_anywhere(fence: Fence) -> None:  # any thread: the store's, a worker's
            loop.call_soon_threadsafe(self._refused, fence)

        self._unlisten = on_refusal(refused_anywhere)
        await self._beat()
        if not self.held and self._alive is not None:
            try:
                for record in await asyncio.to_thread(self.leases.leases):
                    if record.name == self.lease:
                        await self.take_over_from(record, self._alive)
            except Exception:
                log.warning("could not look at the lease's holder", exc_info=True)
        self._task = asyncio.create_task(self._loop(), name=f"leadership:{self.service}")

    async def stop(self, timeout: float) -> None:
        """Stop the work and release the lease (within ``timeout`` seconds)."""
        self._stopping.set()
        self._poke.set()
        try:
            if self._task is not None:  # its beat in hand ends first (a step-down included)
                _, pending = await asyncio.wait({self._task}, timeout=max(timeout * 0.4, 0.1))
                for task in pending:
                    task.cancel()
            fence = self.fence or self._last_fence
            await self._step_down("this instance stops", timeout * 0.5)
            if fence is not None:
                await asyncio.shield(self._release(fence))
        finally:
            if self._unlisten is not None:
                self._unlisten()
                self._unlisten = None

    async def take_over_from(
        self, record: LeaseRecord, alive: Callable[[str], Awaitable[bool]]
    ) -> bool:
        """Take the lease from a holder that is gone: it does not answer on the bus and does
        not renew the lease during a third of a TTL. Safe even when wrong: a holder that was
        alive after all finds its token superseded and every write it tries refused."""
        if not record.live or record.holder == self.holder or await alive(record.holder):
            return False
        seen_at = time.monotonic()
        await asyncio.sleep(self.ttl / 3 + 0.2)
        again = next(
            (r for r in await asyncio.to_thread(self.leases.leases) if r.name == self.lease), None
        )
        if again is None or (again.holder, again.token) != (record.holder, record.token):
            return False
        moved_ms = (time.monotonic() - seen_at) * 1000 + again.expires_in_ms - record.expires_in_ms
        if moved_ms > 100:  # renewed while watched: alive, only silent on the bus
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
        self._step_up(token)
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

    def _refused(self, fence: Fence) -> None:
        if fence == self.fence:  # this instance's own work was refused: renew (or not) now
            self._poke.set()

    async def _loop(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poke.wait(), self.ttl / 3)
            self._poke.clear()
            if self._stopping.is_set():
                return
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
        if self._start_failed is not None:
            await self._step_down(f"{self._start_failed} did not start", self.ttl / 3)
            await self._release(fence)
            return
        asked = time.monotonic()
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
            self._renewed = asked
        else:
            await self._step_down("the lease ran out and was refused renewal", self.ttl / 3)

    async def _try_acquire(self) -> None:
        asked = time.monotonic()
        try:
            token = await asyncio.to_thread(
                self.leases.acquire_lease, self.lease, self.holder, self._ttl_ms()
            )
        except Exception:
            log.warning("lease acquisition failed", exc_info=True, extra={"service": self.service})
            return
        if token is not None:
            self._renewed = asked
            self._step_up(token)
            return
        records = await asyncio.to_thread(self.leases.leases)
        self.leader = next((r.holder for r in records if r.name == self.lease and r.live), None)

    async def _release(self, fence: Fence) -> None:
        try:
            await asyncio.to_thread(
                self.leases.release_lease, fence.lease, fence.holder, fence.token
            )
        except Exception:
            log.warning("could not release the lease; it runs out by itself", exc_info=True)

    def _step_up(self, token: int) -> None:
        fence = Fence(self.lease, self.holder, token)
        self.fence = self._last_fence = fence
        self.leader = self.holder
        self.grants += 1
        self._start_failed = None
        self._renewed = time.monotonic()
        log.info(
            "lease granted: running the singleton work",
            extra={"service": self.service, "lease": self.lease, "fence_token": token},
        )
        self._starting = asyncio.create_task(
            self._start_works(fence), name=f"leader-start:{self.service}"
        )

    async def _start_works(self, fence: Fence) -> None:
        with fenced(fence):
            for named in self._works:
                # Counted as running before it starts: a start cut short or failing half-way
                # is still stopped (every work's stop tolerates a partial start).
                self._running.append(named)
                began = time.monotonic()
                try:
                    await named.work.start()
                    log.debug(
                        "leader work started",
                        extra={"work": named.name, "ms": round((time.monotonic() - began) * 1000)},
                    )
                except Exception:
                    log.exception("leader work %s did not start; the lease is given up", named.name)
                    self._start_failed = named.name
                    self._poke.set()
                    return

    async def _step_down(self, why: str, timeout: float) -> None:
        fence, self.fence = self.fence, None
        starting, self._starting = self._starting, None
        if starting is not None and not starting.done():
            starting.cancel()
            await asyncio.wait({starting}, timeout=max(timeout / 2, 0.05))
        if fence is None and not self._running:
            return
        fence = fence or self._last_fence
        lost = not self._stopping.is_set()
        (log.warning if lost else log.info)(
            "lease given up: singleton work stops",
            extra={
                "service": self.service,
                "lease": self.lease,
                "fence_token": None if fence is None else fence.token,
                "why": why,
            },
        )
        # A lost lease stops the work at once (no flush: the relay must not publish what the new
        # holder publishes); a clean stop gives it its share.
        share = 0.0 if lost else timeout / max(1, len(self._running))
        with fenced(fence) if fence is not None else contextlib.nullcontext():
            while self._running:  # one at a time: a step-down cut short leaves the rest listed
                named = self._running.pop()
                try:
                    await named.work.stop(share)
                except Exception:
                    log.exception("leader work %s did not stop cleanly", named.name)
