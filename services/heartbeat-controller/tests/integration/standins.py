"""Stand-ins, on the bus, for what the controller asks of the supervisor and the gateway (their
real services are not part of these tests): they answer the slot and token subjects as those
services do, and publish ``slot.adapter_finished.v1`` to JetStream with the supervisor's
``Nats-Msg-Id``, so the controller's real inbox hears the end."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from contracts import heartbeat_subjects as hs
from contracts.base import Actor, ErrorReply, Ok
from contracts.run_tokens import MintRunToken, RunTokenIssued
from contracts.slot_events import SlotAdapterFinished
from contracts.slots import (
    AcquireSlot,
    AdapterLaunched,
    GetRunSlot,
    KillAdapter,
    LaunchAdapter,
    ReleaseSlot,
    RunSlot,
    SlotGrant,
)
from contracts.subjects import event_subject
from natsbus.codec import decode, encode

SUPERVISOR = Actor(type="system", id="runtime-supervisor")


@dataclass
class StandIns:
    """The supervisor's slots and the gateway's token mint, as seen from the controller."""

    nc: Any
    js: Any
    hang: bool = False
    """Adapters run until killed (else they exit 0 at once)."""
    slot_of_hold: asyncio.Event | None = None
    """When given, ``GetRunSlot`` answers only once it is set (a slow supervisor at the
    controller's restart: the test decides when it answers); ``stop`` sets it."""
    slot_asked_at: dict[str, float] = field(default_factory=dict)
    """When (``time.monotonic()``) each run's slot was first asked for."""
    calls: list[tuple[str, str]] = field(default_factory=list)
    envs: dict[str, dict[str, str]] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    slots: dict[str, RunSlot] = field(default_factory=dict)
    _position: int = 0
    _subs: list[Any] = field(default_factory=list)

    async def start(self, node: str = "local") -> None:
        routes = {
            hs.acquire_slot(node): (AcquireSlot, self._acquire),
            hs.launch_adapter(node): (LaunchAdapter, self._launch),
            hs.kill_adapter(node): (KillAdapter, self._kill),
            hs.release_slot(node): (ReleaseSlot, self._release),
            hs.SLOT_OF_RUN: (GetRunSlot, self._slot_of),
            hs.RUN_TOKEN_MINT: (MintRunToken, self._mint),
        }
        for subject, (kind, handler) in routes.items():
            self._subs.append(await self.nc.subscribe(subject, cb=self._serve(kind, handler)))
        await self.nc.flush()

    async def stop(self) -> None:
        if self.slot_of_hold is not None:
            self.slot_of_hold.set()
        for sub in self._subs:
            await sub.unsubscribe()

    def of(self, run_id: str) -> list[str]:
        return [what for what, rid in self.calls if rid == run_id]

    def _serve(self, kind: type, handler: Any) -> Any:
        async def serve(msg: Any) -> None:
            request = decode(msg.data, kind)
            try:
                result = await handler(request)
                await msg.respond(encode(Ok(result=result)))
            except LookupError as missing:
                reply = ErrorReply(code="not_found", message=str(missing), status=404)
                await msg.respond(encode(reply))

        return serve

    async def _acquire(self, c: AcquireSlot) -> SlotGrant:
        self.calls.append(("acquire_slot", c.run_id))
        self.slots[c.run_id] = RunSlot(slot_id=f"slot-{c.run_id}", run_id=c.run_id,
                                       type="local_stdio", state="granted")  # fmt: skip
        return SlotGrant(slot_id=f"slot-{c.run_id}", type="local_stdio", index=0,
                         contained=not c.trusted, sandbox="none")  # fmt: skip

    async def _mint(self, c: MintRunToken) -> RunTokenIssued:
        self.calls.append(("mint", c.run_id))
        token = f"clipyard_rt_{uuid.uuid4().hex}"
        self.tokens[c.run_id] = token
        return RunTokenIssued(token_id=str(uuid.uuid4()), token=token, expires_at=c.expires_at)

    async def _launch(self, c: LaunchAdapter) -> AdapterLaunched:
        self.calls.append(("launch", c.run_id))
        self.envs[c.run_id] = dict(c.env)
        now = datetime.now(UTC)
        self.slots[c.run_id] = msgspec.structs.replace(self.slots[c.run_id], state="running",
                                                       started_at=now)  # fmt: skip
        if not self.hang:
            asyncio.get_running_loop().call_later(
                0.05, lambda: asyncio.ensure_future(self.end(c.run_id, c.agent_id, "exited", 0))
            )
        return AdapterLaunched(slot_id=c.slot_id, run_id=c.run_id, pid=1, pgid=1,
                               started_at=now, deadline=now + timedelta(seconds=c.timeout_sec))  # fmt: skip

    async def _kill(self, c: KillAdapter) -> RunSlot:
        self.calls.append(("kill", c.run_id))
        end = "timed_out" if c.timed_out else "killed"
        await self.end(c.run_id, "agent", end, None)
        return self.slots[c.run_id]

    async def _release(self, c: ReleaseSlot) -> None:
        self.calls.append(("release_slot", c.run_id))

    async def _slot_of(self, q: GetRunSlot) -> RunSlot:
        self.calls.append(("get_run_slot", q.run_id))
        self.slot_asked_at.setdefault(q.run_id, time.monotonic())
        if self.slot_of_hold is not None:
            await self.slot_of_hold.wait()
        if q.run_id not in self.slots:
            raise LookupError(f"run {q.run_id} never had a slot")
        return self.slots[q.run_id]

    async def end(self, run_id: str, agent_id: str, end: str, exit_code: int | None,
                  *, publish: bool = True) -> None:  # fmt: skip
        """The adapter ended: the slot is finished and the supervisor publishes it."""
        self.slots[run_id] = msgspec.structs.replace(
            self.slots[run_id], state="finished", end=end, exit_code=exit_code,  # type: ignore[arg-type]
            finished_at=datetime.now(UTC),
        )  # fmt: skip
        if not publish:
            return
        self._position += 1
        event = SlotAdapterFinished(
            event_id=str(uuid.uuid4()), aggregate="slot", aggregate_id=f"slot-{run_id}",
            aggregate_version=3, company_id="c-acme", occurred_at=datetime.now(UTC),
            actor=SUPERVISOR, run_id=run_id, agent_id=agent_id, end=end,  # type: ignore[arg-type]
            exit_code=exit_code, usage={"tokens": 7}, result="done", log_bytes=4,
        )  # fmt: skip
        await self.js.publish(
            event_subject("slot.adapter_finished.v1", "supervisor"), encode(event),
            headers={"Nats-Msg-Id": f"supervisor:{self._position}"},
        )  # fmt: skip
