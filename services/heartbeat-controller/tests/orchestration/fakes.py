"""Fakes of the controller's own ports (realizer, supervisor, gateway), recording every call in
one ordered log, with scripted answers; the supervisor's adapter ends go through the real
supervisor inbox handler (on the store's thread), as ``slot.adapter_finished.v1`` would."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from eventsourcing.persistence import Tracking

from contracts.base import Actor
from contracts.execution_commands import RealizeWorkspace
from contracts.execution_views import RealizeResult
from contracts.run_tokens import MintRunToken, RunTokenIssued
from contracts.runtime_commands import EnsureRunServices, RunServices
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
from heartbeat_controller.orchestration.ports import PortError, RunPorts

SUPERVISOR = Actor(type="system", id="runtime-supervisor")
_positions = itertools.count(1)


def realize_result(workspace_id: str, company_id: str, issue_id: str) -> RealizeResult:
    """A realize answer naming ``workspace_id`` (only the fields the controller reads matter)."""
    from contracts.execution_views import ExecutionWorkspace

    fields = {f: None for f in ExecutionWorkspace.__struct_fields__}
    fields |= {"id": workspace_id, "company_id": company_id, "source_issue_id": issue_id}
    workspace = _lenient(ExecutionWorkspace, fields)
    return RealizeResult(workspace=workspace, created=True)


def _lenient(kind: type, fields: dict[str, Any]) -> Any:
    """Build a Struct from the fields given, filling the required ones it lacks with defaults
    of their annotated kind (the controller reads only ``id``)."""
    import msgspec

    info = msgspec.inspect.type_info(kind)
    values: dict[str, Any] = {}
    for f in info.fields:  # type: ignore[attr-defined]
        value = fields.get(f.name)
        if value is None and f.required:
            value = _default_of(f.type)
        if value is not None or f.required:
            values[f.name] = value
    return kind(**values)


def _default_of(t: Any) -> Any:
    import msgspec

    if isinstance(t, msgspec.inspect.UnionType):
        for member in t.types:
            if isinstance(member, msgspec.inspect.NoneType):
                return None
        return _default_of(t.types[0])
    if isinstance(t, msgspec.inspect.StrType):
        return "x"
    if isinstance(t, msgspec.inspect.LiteralType):
        return t.values[0]
    if isinstance(t, msgspec.inspect.IntType):
        return 0
    if isinstance(t, msgspec.inspect.BoolType):
        return False
    if isinstance(t, msgspec.inspect.DateTimeType):
        return datetime.now(UTC)
    if isinstance(t, msgspec.inspect.ListType):
        return []
    if isinstance(t, msgspec.inspect.DictType):
        return {}
    if isinstance(t, msgspec.inspect.StructType):
        return _lenient(t.cls, {})
    return None


@dataclass
class Script:
    """What the fakes answer (each test changes what it needs)."""

    realize: Callable[[RealizeWorkspace], RealizeResult] | PortError | None = None
    realize_gate: asyncio.Event | None = None
    services_error: PortError | None = None
    services_refusals: list[PortError] = field(default_factory=list)
    """Errors ``EnsureRunServices`` answers first, one per call, before it succeeds."""
    slot_refusals: list[PortError] = field(default_factory=list)
    slot_refuse_always: PortError | None = None
    slot_gate: asyncio.Event | None = None
    """``AcquireSlot`` is answered only once this is set (a supervisor that does not answer)."""
    mint_error: PortError | None = None
    launch_error: PortError | None = None
    exit_code: int | None = 0
    """The adapter's exit code; None: it runs until killed."""
    run_for: float = 0.05
    timeout_sec: int = 3600
    kill_answers: bool = True
    kill_sends_end: bool = True
    slots: dict[str, RunSlot] = field(default_factory=dict)
    """``GetRunSlot`` answers (recovery tests)."""


class World:
    """The fake services, their call log, and the way back through the supervisor inbox."""

    def __init__(self, deliver: Callable[[SlotAdapterFinished], Any]) -> None:
        self.script = Script()
        self.calls: list[tuple[str, str, Any]] = []
        """``(what, run_id, message)`` in call order."""
        self._deliver = deliver
        self.launch_env: dict[str, dict[str, str]] = {}
        self.running: dict[str, str] = {}
        """Runs whose adapter runs now → their workspace (None: none)."""
        self.overlaps: list[tuple[str, str]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self.ports = RunPorts(realizer=self, supervisor=self, gateway=self)  # type: ignore[arg-type]

    def of(self, run_id: str) -> list[str]:
        """The calls made for one run, in order."""
        return [what for what, rid, _ in self.calls if rid == run_id]

    # -- realizer --------------------------------------------------------------------------

    async def realize(self, command: RealizeWorkspace) -> RealizeResult:
        self.calls.append(("realize", command.principal.run_id or "", command))
        if self.script.realize_gate is not None:
            await self.script.realize_gate.wait()
        answer = self.script.realize
        if isinstance(answer, PortError):
            raise answer
        if answer is not None:
            return answer(command)
        return realize_result(f"ws-{command.issue_id}", command.principal.company_id or "",
                              command.issue_id)  # fmt: skip

    # -- supervisor ------------------------------------------------------------------------

    async def ensure_run_services(
        self, command: EnsureRunServices, node: str | None = None
    ) -> RunServices:
        self.calls.append(("ensure_services", command.run_id, command))
        if self.script.services_error is not None:
            raise self.script.services_error
        if self.script.services_refusals:
            raise self.script.services_refusals.pop(0)
        return RunServices()

    async def acquire_slot(self, command: AcquireSlot, node: str | None = None) -> SlotGrant:
        self.calls.append(("acquire_slot", command.run_id, command))
        if self.script.slot_gate is not None:
            await self.script.slot_gate.wait()
        if self.script.slot_refuse_always is not None:
            raise self.script.slot_refuse_always
        if self.script.slot_refusals:
            raise self.script.slot_refusals.pop(0)
        return SlotGrant(slot_id=f"slot-{command.run_id}", type="local_stdio", index=0,
                         contained=not command.trusted, sandbox="none")  # fmt: skip

    async def launch_adapter(
        self, command: LaunchAdapter, node: str | None = None
    ) -> AdapterLaunched:
        self.calls.append(("launch", command.run_id, command))
        self.launch_env[command.run_id] = dict(command.env)
        if self.script.launch_error is not None:
            raise self.script.launch_error
        workspace = command.workspace_id
        for other, held in self.running.items():
            if workspace is not None and held == workspace:
                self.overlaps.append((other, command.run_id))
        self.running[command.run_id] = workspace or ""
        now = datetime.now(UTC)
        if self.script.exit_code is not None:
            self._spawn(self._exit_later(command.run_id, command.agent_id, self.script.exit_code))
        return AdapterLaunched(slot_id=command.slot_id, run_id=command.run_id, pid=4242,
                               pgid=4242, started_at=now,
                               deadline=now + timedelta(seconds=command.timeout_sec))  # fmt: skip

    async def kill_adapter(self, command: KillAdapter, node: str | None = None) -> RunSlot:
        self.calls.append(("kill", command.run_id, command))
        if not self.script.kill_answers:
            raise PortError("timeout", "runtime-supervisor did not answer", 504)
        end = "timed_out" if command.timed_out else "killed"
        if self.script.kill_sends_end:
            self.end(command.run_id, "a-agent", end, None, signal="SIGTERM")
        return RunSlot(slot_id=f"slot-{command.run_id}", run_id=command.run_id,
                       type="local_stdio", state="finished", end=end, signal="SIGTERM",
                       usage={"tokens": 2}, result={"partial": True},
                       stdout_excerpt="working...\n", stderr_excerpt="stopping\n",
                       log_bytes=20)  # fmt: skip

    async def release_slot(self, command: ReleaseSlot, node: str | None = None) -> None:
        self.calls.append(("release_slot", command.run_id, command))
        self.running.pop(command.run_id, None)

    async def get_run_slot(self, command: GetRunSlot) -> RunSlot | None:
        self.calls.append(("get_run_slot", command.run_id, command))
        return self.script.slots.get(command.run_id)

    # -- gateway ---------------------------------------------------------------------------

    async def mint_run_token(self, command: MintRunToken) -> RunTokenIssued:
        self.calls.append(("mint", command.run_id, command))
        if self.script.mint_error is not None:
            raise self.script.mint_error
        return RunTokenIssued(token_id=f"tok-{command.run_id}", token=f"secret-{command.run_id}",
                              expires_at=command.expires_at)  # fmt: skip

    # -- ends ------------------------------------------------------------------------------

    def end(self, run_id: str, agent_id: str, end: str, exit_code: int | None,
            signal: str | None = None) -> None:  # fmt: skip
        """The supervisor publishes the adapter's end (through the real inbox handler)."""
        self.running.pop(run_id, None)
        event = finished_event(run_id, agent_id, end, exit_code, signal)
        self._spawn(self._deliver(event))

    async def _exit_later(self, run_id: str, agent_id: str, code: int) -> None:
        await asyncio.sleep(self.script.run_for)
        if run_id in self.running:
            self.end(run_id, agent_id, "exited", code)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def finished_event(run_id: str, agent_id: str, end: str, exit_code: int | None,
                   signal: str | None = None, company_id: str = "c-acme") -> SlotAdapterFinished:  # fmt: skip
    """``slot.adapter_finished.v1`` as the supervisor publishes it."""
    return SlotAdapterFinished(
        event_id=str(uuid.uuid4()), aggregate="slot", aggregate_id=f"slot-{run_id}",
        aggregate_version=3, company_id=company_id, occurred_at=datetime.now(UTC),
        actor=SUPERVISOR, run_id=run_id, agent_id=agent_id, end=end,  # type: ignore[arg-type]
        exit_code=exit_code, signal=signal, usage={"tokens": 1}, result={"ok": exit_code == 0},
        stdout_excerpt="out", stderr_excerpt="", log_bytes=3,
    )  # fmt: skip


def next_tracking(upstream: str) -> Tracking:
    """The next upstream position (each delivery is a new message)."""
    return Tracking(upstream, next(_positions))
