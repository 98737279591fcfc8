"""Fixtures of the orchestration tests: the real application on the in-memory store behind a real
store thread, the real dispatcher and runners, the real inbox handlers, and fakes of the
controller's own ports (``fakes.World``)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakes import World, next_tracking

from contracts.agents import CreateAgent, RunView, UpdateAgent, WakeAgent
from contracts.base import Actor, Principal
from contracts.slot_events import SlotAdapterFinished
from contracts.workspace_events import IssueCreated
from eventstore import StoreExecutor, acting, audit_trail, system_cause
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.inbox import HandOffs, RunHandOffs, realizer_inbox, supervisor_inbox
from heartbeat_controller.orchestration.context import Orchestration, RunSettings
from heartbeat_controller.orchestration.dispatcher import Dispatcher

ACME = "c-acme"
BOARD = Principal(company_id=ACME, actor=Actor(type="board", id="board-1"))
ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="operator"))
REALIZER = Actor(type="system", id="workspace-realizer")
FINISHED = ("succeeded", "failed", "cancelled", "timed_out")
T = TypeVar("T")

FAST = RunSettings(api_url="http://api.test:9000", kill_grace=0.3, end_wait=0.5,
                   slot_retry_initial=0.02, slot_retry_max=0.05, tick=0.05,
                   finish_retry_initial=0.01, finish_retry_max=0.05)  # fmt: skip


class Harness:
    """The controller's orchestration in this process, and ways to drive it."""

    def __init__(self, app: HeartbeatControllerApplication, executor: StoreExecutor) -> None:
        self.app = app
        self.executor = executor
        self.hooks = HandOffs("the test's orchestration")
        self.world = World(self.deliver)
        self.orch = self.make_orchestration()
        self.dispatcher = Dispatcher(self.orch)
        handoffs = RunHandOffs(asyncio.get_running_loop(), nudge=self.dispatcher.nudge,
                               deliver_end=self.orch.deliver_end)  # fmt: skip
        self.hooks.set(handoffs)
        app.on_workspace_handed.append(
            lambda run_ids: handoffs.call_soon(self.orch.hand_over, run_ids)
        )
        self._supervisor = partial(supervisor_inbox(self.hooks), app)
        self._realizer = partial(realizer_inbox(self.hooks), app)
        self._issue_versions: dict[str, int] = {}

    def make_orchestration(self, settings: RunSettings = FAST) -> Orchestration:
        return Orchestration(app=self.app, store=self.executor.run, ports=self.world.ports,
                             settings=settings)  # fmt: skip

    async def store(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self.executor.run(fn, *args, **kwargs)

    async def deliver(self, event: SlotAdapterFinished) -> None:
        """``slot.adapter_finished.v1`` through the supervisor inbox handler (store thread)."""
        with acting(system_cause("heartbeat-controller", "inbox supervisor")):
            await self.executor.run(self._supervisor, event, next_tracking("supervisor"))

    async def issue(self, issue_id: str, assignee: str | None = None) -> None:
        """The realizer's ``issue.created.v1`` through the realizer inbox handler."""
        import uuid

        event = IssueCreated(
            event_id=str(uuid.uuid4()), aggregate="issue", aggregate_id=issue_id,
            aggregate_version=1, company_id=ACME, occurred_at=datetime.now(UTC), actor=REALIZER,
            project_id="p-1", identifier=f"ACME-{issue_id}", title="t", status="todo",
            assignee_agent_id=assignee,
        )  # fmt: skip
        with acting(system_cause("heartbeat-controller", "inbox realizer")):
            await self.executor.run(self._realizer, event, next_tracking("realizer"))

    async def agent(self, name: str = "bot", *, trusted: bool = True, timeout_sec: int = 60,
                    adapter_type: str = "process", max_runs: int = 1) -> str:  # fmt: skip
        config: dict[str, Any] = (
            {"url": "http://agent.test/run", "timeoutSec": timeout_sec}
            if adapter_type == "http"
            else {"command": ["/bin/true"], "env": {"MY_VAR": "1"}, "timeoutSec": timeout_sec}
        )
        command = CreateAgent(principal=BOARD, name=name, adapter_type=adapter_type,  # type: ignore[arg-type]
                              adapter_config=config, max_concurrent_runs=max_runs)  # fmt: skip
        with acting(system_cause("test", "create agent")):
            view = await self.store(self.app.create_agent, BOARD, command)
        if trusted:  # only the admin key makes an agent trusted
            grant = UpdateAgent(principal=ADMIN, agent_id=str(view.id), trust_level="trusted")
            await self.store(self.app.update_agent, ADMIN, grant)
        return str(view.id)

    async def wake(self, agent_id: str, issue_id: str | None = None, **fields: Any) -> str:
        command = WakeAgent(principal=BOARD, agent_id=agent_id, issue_id=issue_id, **fields)
        with acting(system_cause("test", "wake")):
            accepted = await self.store(self.app.wake, BOARD, command)
        self.dispatcher.nudge()
        return str(accepted.run_id)

    async def run(self, run_id: str) -> RunView:
        view: RunView = await self.store(self.app.get_run, BOARD, run_id)
        return view

    async def cancel(self, run_id: str) -> RunView:
        with acting(system_cause("test", "cancel")):
            view, act = await self.store(self.app.request_cancel, BOARD, run_id)
        if act:
            self.orch.request_cancel(run_id)
        self.dispatcher.nudge()
        return view  # type: ignore[no-any-return]

    async def finished(self, run_id: str, timeout: float = 10.0) -> RunView:
        return await self.until(run_id, lambda v: v.status in FINISHED, timeout)

    async def until(self, run_id: str, check: Callable[[RunView], bool],
                    timeout: float = 10.0) -> RunView:  # fmt: skip
        end = time.monotonic() + timeout
        while True:
            view = await self.run(run_id)
            if check(view):
                return view
            if time.monotonic() > end:
                raise AssertionError(f"run {run_id} stuck: {view.status} {view.stage}")
            await asyncio.sleep(0.02)

    async def called(self, run_id: str, what: str, timeout: float = 10.0) -> None:
        """Wait until a port was called for the run."""
        end = time.monotonic() + timeout
        while what not in self.world.of(run_id):
            assert time.monotonic() < end, f"{what} never called for {run_id}"
            await asyncio.sleep(0.01)

    async def stages(self, run_id: str) -> list[str]:
        """The stages the run's stored history shows, in order."""
        trail = await self.store(audit_trail, self.app, run_id)
        stages = ["wakeup"]
        for row in trail.events:
            stage = row.data.get("stage")
            if row.type == "run.stage_changed.v1" and stage:
                stages.append(stage)
        return stages

    async def stored_bytes(self) -> bytes:
        """Every stored event's state, concatenated (to look for secrets)."""

        def read() -> bytes:
            items = self.app.recorder.select_notifications(start=1, limit=100_000)
            return b"\n".join(bytes(n.state) for n in items)

        return await self.store(read)


@pytest.fixture
async def idle() -> AsyncIterator[Harness]:
    """The harness, its dispatcher not started (recovery tests)."""
    executor = StoreExecutor(name="controller-test-store")
    app = await executor.run(HeartbeatControllerApplication, service="controller")
    harness = Harness(app, executor)
    try:
        yield harness
    finally:
        await harness.dispatcher.stop()
        await harness.orch.close()
        await executor.run(app.close)
        executor.close(wait=False)


@pytest.fixture
async def h(idle: Harness) -> Harness:
    """The harness, its dispatcher running."""
    idle.dispatcher.start()
    return idle
