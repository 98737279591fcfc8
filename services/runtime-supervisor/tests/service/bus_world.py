"""Helpers of the service tests: ``Upstream`` publishes real contract events of the realizer and
the controller to JetStream (with the ``Nats-Msg-Id`` their outbox relays write), and ``Sup``
talks to a running supervisor over the bus, as the gateway and the controller do."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from contracts.base import Actor, ErrorReply, Event, Ok, Principal
from contracts.execution_events import WorkspaceConfigChanged, WorkspaceRealized
from contracts.run_events import RunFinished, RunStarted
from contracts.runtime_commands import (
    ControlRuntime,
    EnsureRunServices,
    GetRuntimeServiceLog,
    GetRuntimeState,
    ListRuntimeSummaries,
    RuntimeState,
    RuntimeSummaries,
)
from contracts.runtime_subjects import (
    RUNTIME_LOG,
    RUNTIME_STATE,
    RUNTIME_SUMMARIES,
    ensure_run_services,
    runtime_control,
)
from contracts.subjects import event_subject
from contracts.workspace_config import (
    EgressRule,
    ExecutionWorkspaceConfig,
    ExecutionWorkspacePolicy,
    HttpReadiness,
    PortSpec,
    RuntimeConfig,
    ServiceSpec,
)
from contracts.workspace_events import (
    IssueCreated,
    IssueStatusChanged,
    ProjectCreated,
    ProjectUpdated,
    ProjectWorkspaceCreated,
)
from natsbus import BusClient

ACME = "c-acme"
REALIZER = Actor(type="system", id="workspace-realizer")
CONTROLLER = Actor(type="system", id="heartbeat-controller")
BOARD = Principal(company_id=ACME, actor=Actor(type="board", id="board-1"))
OPERATOR = Principal(company_id=None, actor=Actor(type="admin", id="operator"))
HTTP_SERVER = "exec python3 -m http.server $PORT --bind 127.0.0.1"
T = TypeVar("T")


def agent(agent_id: str, run_id: str) -> Principal:
    """An agent's principal acting for its run."""
    return Principal(company_id=ACME, actor=Actor(type="agent", id=agent_id), run_id=run_id)


def http_service(name: str = "web", **fields: Any) -> ServiceSpec:
    """``python3 -m http.server`` on an automatic port with http readiness."""
    values: dict[str, Any] = {
        "name": name,
        "command": HTTP_SERVER,
        "port": PortSpec(type="auto"),
        "readiness": HttpReadiness(url_template="http://127.0.0.1:{{port}}/", timeout_sec=15),
    }
    return ServiceSpec(**(values | fields))


def runtime(*services: ServiceSpec, jobs: list[Any] | None = None) -> RuntimeConfig:
    """A ``{services, jobs}`` runtime config."""
    return RuntimeConfig(services=list(services), jobs=list(jobs or []))


async def eventually(probe: Callable[[], Awaitable[T | None]], timeout: float = 15.0,
                     what: str = "the condition") -> T:  # fmt: skip
    """Poll ``probe`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        found = await probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {timeout:g}s (last: {found!r})")
        await asyncio.sleep(0.1)


@dataclass
class Upstream:
    """Publishes the realizer's and the controller's events as their relays would."""

    js: Any
    positions: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    company: str = ACME
    """The company of what it publishes (``dataclasses.replace`` shares the positions)."""
    node: str = "local"
    """The worker node the workspaces it realizes are on (the supervisor's own, by default)."""

    def envelope(
        self, aggregate: str, aggregate_id: str, actor: Actor = REALIZER
    ) -> dict[str, Any]:
        version = self.versions[aggregate_id] = self.versions.get(aggregate_id, 0) + 1
        return {
            "event_id": str(uuid.uuid4()), "aggregate": aggregate, "aggregate_id": aggregate_id,
            "aggregate_version": version, "company_id": self.company,
            "occurred_at": datetime.now(UTC),
            "actor": actor,
        }  # fmt: skip

    async def publish(self, event: Event, upstream: str = "realizer") -> None:
        position = self.positions[upstream] = self.positions.get(upstream, 0) + 1
        tag = type(event).__struct_config__.tag
        await self.js.publish(
            event_subject(str(tag), upstream),  # type: ignore[arg-type]
            msgspec.json.encode(event),
            headers={"Nats-Msg-Id": f"{upstream}:{position}"},
        )

    async def project(self, allowlist: list[EgressRule], *, created: bool = True) -> None:
        """Project ``p-1`` (created, else updated) with its egress allowlist."""
        policy = ExecutionWorkspacePolicy(egress_allowlist=allowlist)
        event = ProjectCreated if created else ProjectUpdated
        await self.publish(event(**self.envelope("project", "p-1"), name="Web",
                                 execution_workspace_policy=policy))  # fmt: skip

    async def project_workspace(self, cwd: str, config: RuntimeConfig | None = None) -> str:
        pw = str(uuid.uuid4())
        await self.publish(ProjectWorkspaceCreated(
            **self.envelope("project_workspace", pw), project_id="p-1", name="main", cwd=cwd,
            repo_url=None, repo_ref="main", is_primary=True, runtime_config=config))  # fmt: skip
        return pw

    async def issue(self, identifier: str = "ACME-1", status: str = "in_progress") -> str:
        issue = str(uuid.uuid4())
        await self.publish(IssueCreated(
            **self.envelope("issue", issue), project_id="p-1", identifier=identifier,
            title=f"Work on {identifier}", status=status))  # type: ignore[arg-type]  # fmt: skip
        return issue

    async def issue_status(self, issue: str, from_status: str, to_status: str) -> None:
        await self.publish(IssueStatusChanged(
            **self.envelope("issue", issue), from_status=from_status, to_status=to_status,  # type: ignore[arg-type]
            is_terminal=to_status in ("done", "cancelled")))  # fmt: skip

    async def workspace(self, cwd: str, *, pw: str | None = None, issue: str | None = None,
                        config: ExecutionWorkspaceConfig | None = None,
                        mode: str = "isolated_workspace", branch: str = "ACME-1",
                        ws: str | None = None) -> str:  # fmt: skip
        ws = ws or str(uuid.uuid4())
        await self.publish(WorkspaceRealized(
            **self.envelope("workspace", ws), project_id="p-1", project_workspace_id=pw,
            source_issue_id=issue, mode=mode, strategy_type="git_worktree",  # type: ignore[arg-type]
            provider_type="git_worktree", provider_ref=cwd, name="ACME-1", status="active",
            cwd=cwd, repo_url=None, base_ref="origin/main", branch_name=branch,
            node_id=self.node, created_worktree=True, config=config))  # fmt: skip
        return ws

    async def ws_config(self, ws: str, config: ExecutionWorkspaceConfig) -> None:
        await self.publish(WorkspaceConfigChanged(**self.envelope("workspace", ws), config=config))

    async def run_started(self, ws: str, agent_id: str, issue: str | None = None,
                          run: str | None = None) -> str:  # fmt: skip
        run = run or str(uuid.uuid4())
        await self.publish(RunStarted(**self.envelope("run", run, CONTROLLER), agent_id=agent_id,
                                      issue_id=issue, workspace_id=ws), "controller")  # fmt: skip
        return run

    async def run_finished(self, run: str, ws: str, agent_id: str = "agent-1") -> None:
        await self.publish(RunFinished(**self.envelope("run", run, CONTROLLER), agent_id=agent_id,
                                       workspace_id=ws, status="succeeded"), "controller")  # fmt: skip


@dataclass
class Sup:
    """A running supervisor, over the bus."""

    bus: BusClient
    node: str = "local"

    async def request(self, subject: str, message: Any, timeout: float = 30.0) -> Any:
        return await self.bus.request(subject, message, timeout=timeout)

    async def ok(self, subject: str, message: Any, timeout: float = 30.0) -> Any:
        reply = await self.request(subject, message, timeout)
        assert isinstance(reply, Ok), reply
        return reply.result

    async def control(self, action: str, ws: str | None = None, *, pw: str | None = None,
                      principal: Principal = BOARD, **fields: Any) -> Any:  # fmt: skip
        """The reply (``Ok`` or ``ErrorReply``) of a ``ControlRuntime``."""
        command = ControlRuntime(principal=principal, workspace_id=ws, project_workspace_id=pw,
                                 action=action, **fields)  # type: ignore[arg-type]  # fmt: skip
        return await self.request(runtime_control(self.node), command, timeout=60.0)

    async def ok_control(self, action: str, ws: str | None = None, **fields: Any) -> dict[str, Any]:
        reply = await self.control(action, ws, **fields)
        assert isinstance(reply, Ok), reply
        result: dict[str, Any] = reply.result
        return result

    async def error(self, action: str, ws: str | None = None, **fields: Any) -> ErrorReply:
        reply = await self.control(action, ws, **fields)
        assert isinstance(reply, ErrorReply), reply
        return reply

    async def state(self, ws: str | None = None, *, pw: str | None = None,
                    probe: bool = False) -> RuntimeState:  # fmt: skip
        query = GetRuntimeState(principal=BOARD, workspace_id=ws, project_workspace_id=pw,
                                probe_health=probe)  # fmt: skip
        return await self.bus.call(RUNTIME_STATE, query, RuntimeState, timeout=30.0)

    async def summaries(self, *ws: str, principal: Principal = BOARD) -> RuntimeSummaries:
        query = ListRuntimeSummaries(principal=principal, workspace_ids=list(ws))
        return await self.bus.call(RUNTIME_SUMMARIES, query, RuntimeSummaries, timeout=30.0)

    async def known(self, ws: str | None = None, *, pw: str | None = None,
                    check: Callable[[RuntimeState], bool] | None = None,
                    principal: Principal = BOARD) -> RuntimeState:  # fmt: skip
        """Wait until the supervisor's copies know the target (and ``check`` holds)."""

        async def probe() -> RuntimeState | None:
            query = GetRuntimeState(principal=principal, workspace_id=ws, project_workspace_id=pw)
            reply = await self.bus.request(RUNTIME_STATE, query, timeout=10.0)
            if not isinstance(reply, Ok):
                return None
            state = msgspec.convert(reply.result, RuntimeState)
            return state if check is None or check(state) else None

        return await eventually(probe, what=f"the supervisor knowing {ws or pw}")

    async def row(self, ws: str, service_id: str) -> Any:
        state = await self.state(ws)
        return next((r for r in state.runtime_services if r.id == service_id), None)

    async def wait_status(self, ws: str, service_id: str, *statuses: str,
                          timeout: float = 20.0) -> Any:  # fmt: skip
        """Wait for the instance's status (a supervisor still starting may not answer yet:
        its micro ping answers before its endpoints exist)."""

        async def probe() -> Any:
            query = GetRuntimeState(principal=BOARD, workspace_id=ws)
            reply = await self.bus.request(RUNTIME_STATE, query, timeout=10.0)
            if not isinstance(reply, Ok):
                return None
            rows = msgspec.convert(reply.result, RuntimeState).runtime_services
            row = next((r for r in rows if r.id == service_id), None)
            return row if row is not None and row.status in statuses else None

        return await eventually(probe, timeout, f"service {service_id} {'/'.join(statuses)}")

    async def log(self, ws: str, service_id: str, **fields: Any) -> Any:
        query = GetRuntimeServiceLog(principal=BOARD, workspace_id=ws, service_id=service_id,
                                     **fields)  # fmt: skip
        return await self.request(RUNTIME_LOG, query)

    async def run_copied(self, ws: str, run: str, agent_id: str) -> None:
        """Wait until the supervisor's copy of the controller's events has ``run`` (running on
        ``ws``), and so everything the controller published before it. The probe changes
        nothing: its agent stops a service that does not exist, which is 403 until the run is
        known to hold ``ws`` (a run not heard of yet is waited for a moment first), then 404."""

        async def probe() -> Any:
            reply = await self.control("stop", ws, principal=agent(agent_id, run),
                                       runtime_service_id=str(uuid.uuid4()))  # fmt: skip
            assert isinstance(reply, ErrorReply), reply
            return reply if reply.code == "not_found" else None

        await eventually(probe, what=f"the supervisor knowing run {run}")

    async def ensure(self, ws: str, run: str, agent_id: str = "agent-1") -> Any:
        """``EnsureRunServices`` as the controller asks it: Clipyard itself, for the run."""
        principal = Principal(company_id=ACME, actor=CONTROLLER, run_id=run)
        command = EnsureRunServices(principal=principal, workspace_id=ws, run_id=run,
                                    agent_id=agent_id)  # fmt: skip
        return await self.request(ensure_run_services(self.node), command, timeout=60.0)
