"""Helpers of the slot tests: ``Slots`` talks to the supervisor's slot endpoints over the bus
as the controller does; ``reap_runs`` kills what a test's adapters left."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import nats

from contracts import heartbeat_subjects as hs
from contracts.agents import AdapterLimits
from contracts.base import Actor, ErrorReply, Ok, Principal
from contracts.execution_commands import ListWorkspaceOperations
from contracts.slots import (
    AcquireSlot,
    GetRunLog,
    GetRunSlot,
    GetSlotHealth,
    KillAdapter,
    LaunchAdapter,
    ReleaseSlot,
    RunSlot,
    SlotGrant,
)
from contracts.workspace_subjects import workspace_operations
from natsbus import BusClient
from runtime_supervisor.adapters.process import group_members

ACME = "c-acme"
OTHER = "c-other"
CONTROLLER = Principal(company_id=ACME, actor=Actor(type="system", id="heartbeat-controller"))
STRANGER = Principal(company_id=OTHER, actor=Actor(type="board", id="board-other"))


async def endpoints_ready(url: str, timeout: float = 20.0) -> None:
    connection = await nats.connect(url)
    try:
        bus = BusClient(connection)
        query = ListWorkspaceOperations(principal=CONTROLLER, workspace_id=str(uuid.uuid4()))
        deadline = time.monotonic() + timeout
        while True:
            reply = await bus.request(workspace_operations("supervisor"), query, timeout=5.0)
            if not (isinstance(reply, ErrorReply) and reply.code == "service_unavailable"):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the supervisor's endpoints did not answer: {reply}")
            await asyncio.sleep(0.05)
    finally:
        await connection.drain()


def company_uid(home: Path, company_id: str = ACME) -> int:
    """The uid the supervisor of ``home`` runs ``company_id``'s contained work as."""
    base = int((home / "id-range").read_text().strip())
    table = json.loads((home / "identities.json").read_text())
    return base + int(table[company_id])


def uid_processes(uid: int) -> list[int]:
    """The live processes running as ``uid``."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            status = (entry / "status").read_text()
            uids = next(line for line in status.splitlines() if line.startswith("Uid:"))
            state = next(line for line in status.splitlines() if line.startswith("State:"))
            if str(uid) in uids.split()[1:] and state.split()[1] not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def reap_runs(home: Path) -> None:
    """SIGKILL every process whose cwd lies under ``home`` or the test's folders (a test that
    failed half-way may leave an adapter)."""
    root = str(home.parent)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.readlink(entry / "cwd").startswith(root) and int(entry.name) != os.getpid():
                for member in group_members(os.getpgid(int(entry.name))) or [int(entry.name)]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(member, signal.SIGKILL)


@dataclass
class Slots:
    """The supervisor's slots, over the bus."""

    bus: BusClient
    node: str = "local"

    async def request(self, subject: str, message: Any) -> Any:
        return await self.bus.request(subject, message, timeout=30.0)

    async def acquire(self, run_id: str, *, trusted: bool, adapter_type: str = "process",
                      principal: Principal = CONTROLLER) -> Any:  # fmt: skip
        return await self.request(hs.acquire_slot(self.node), AcquireSlot(
            principal=principal, run_id=run_id, agent_id="agent-1",
            adapter_type=adapter_type, trusted=trusted))  # type: ignore[arg-type]  # fmt: skip

    async def grant(
        self, run_id: str, *, trusted: bool, adapter_type: str = "process"
    ) -> SlotGrant:
        reply = await self.acquire(run_id, trusted=trusted, adapter_type=adapter_type)
        assert isinstance(reply, Ok), reply
        return msgspec.convert(reply.result, SlotGrant)

    async def launch(self, grant: SlotGrant, run_id: str, command: list[str], *,
                     trusted: bool, workspace_id: str | None = None, timeout_sec: int = 60,
                     env: dict[str, str] | None = None, limits: AdapterLimits | None = None,
                     **fields: Any) -> Any:  # fmt: skip
        return await self.request(hs.launch_adapter(self.node), LaunchAdapter(
            principal=CONTROLLER, slot_id=grant.slot_id, run_id=run_id, agent_id="agent-1",
            workspace_id=workspace_id, adapter_type=fields.pop("adapter_type", "process"),
            command=command, env=env or {}, timeout_sec=timeout_sec,
            limits=limits or AdapterLimits(), trusted=trusted, **fields))  # fmt: skip

    async def slot(self, run_id: str, principal: Principal = CONTROLLER) -> Any:
        return await self.request(hs.SLOT_OF_RUN, GetRunSlot(principal=principal, run_id=run_id))

    async def finished(self, run_id: str, timeout: float = 30.0) -> RunSlot:
        deadline = time.monotonic() + timeout
        while True:
            reply = await self.slot(run_id)
            assert isinstance(reply, Ok), reply
            found = msgspec.convert(reply.result, RunSlot)
            if found.state in ("finished", "released"):
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"run {run_id}'s adapter did not finish: {found}")
            await asyncio.sleep(0.1)

    async def kill(self, run_id: str, *, timed_out: bool = False) -> Any:
        return await self.request(hs.kill_adapter(self.node),
                                  KillAdapter(principal=CONTROLLER, run_id=run_id,
                                              timed_out=timed_out))  # fmt: skip

    async def release(self, run_id: str) -> Any:
        return await self.request(hs.release_slot(self.node),
                                  ReleaseSlot(principal=CONTROLLER, run_id=run_id))  # fmt: skip

    async def log(self, run_id: str, offset: int = 0, length: int = 65536,
                  principal: Principal = CONTROLLER) -> Any:  # fmt: skip
        return await self.request(hs.SLOT_RUN_LOG, GetRunLog(
            principal=principal, run_id=run_id, offset=offset, length=length))  # fmt: skip

    async def health(self, principal: Principal = CONTROLLER) -> Any:
        return await self.request(hs.SLOT_HEALTH, GetSlotHealth(principal=principal))


@dataclass(frozen=True)
class Repo:
    """A git repository with two worktrees (branches ``agent-work`` and ``sibling``)."""

    root: Path
    worktree: Path
    sibling: Path

    def git(self, *args: str, cwd: Path | None = None) -> str:
        done = subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=cwd or self.root,
                              capture_output=True, text=True, check=True)  # fmt: skip
        return done.stdout.strip()
