"""Helpers of the state tests: a pinned clock, and ``World``, which publishes real contract
events of the realizer and the controller into the supervisor's inbox handlers (encoded and
decoded as the inbox does)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import msgspec
from eventsourcing.persistence import Tracking

from contracts.base import Actor, Event
from contracts.events import AnyEvent
from contracts.execution_events import (
    WorkspaceArchived,
    WorkspaceArchiveStarted,
    WorkspaceConfigChanged,
    WorkspaceRealized,
    WorkspaceReopened,
    WorkspaceReused,
    WorkspaceStatusChanged,
)
from contracts.run_events import RunFinished, RunStarted, RunWorkspaceLeased
from contracts.workspace_config import (
    ExecutionWorkspaceConfig,
    ManagedCheckout,
    RuntimeConfig,
    ServiceSpec,
)
from contracts.workspace_events import (
    IssueCreated,
    IssueDeleted,
    IssueStatusChanged,
    ProjectWorkspaceCheckoutChanged,
    ProjectWorkspaceCreated,
    ProjectWorkspaceDeleted,
    ProjectWorkspaceRuntimeConfigChanged,
)
from eventstore.publication import check_publishable
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.domain import RuntimeTarget
from runtime_supervisor.inbox import RunFinishedHandOver, controller_inbox, realizer_inbox
from runtime_supervisor.publishing import to_contract
from runtime_supervisor.usecases.services import Release

ACME = "c-acme"
OTHER = "c-other"
REALIZER = Actor(type="system", id="workspace-realizer")
CONTROLLER = Actor(type="system", id="heartbeat-controller")
START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

WEB = ServiceSpec(name="web", command="python3 -m http.server $PORT", port=None)
DB = ServiceSpec(name="db", command="postgres -D data")


@dataclass
class Clock:
    """The application's notion of now, moved by hand."""

    now: datetime = START

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def make_app(clock: Clock) -> RuntimeSupervisorApplication:
    """The supervisor's application on the in-memory store, its clock pinned, its events checked
    for publication before they are saved."""
    application = RuntimeSupervisorApplication(service="supervisor")
    application.now = lambda: clock.now  # type: ignore[method-assign]
    # As the outbox relay does: an event that could never be published fails its save.
    application.publication_check = lambda event: check_publishable(
        to_contract, event, service="supervisor"
    )
    return application


def _wire(event: Event) -> Any:
    """The event as the inbox receives it: encoded, then decoded through the public union."""
    return msgspec.json.decode(msgspec.json.encode(event), type=AnyEvent)


@dataclass
class World:
    """Publishes the realizer's and the controller's events to the supervisor's handlers."""

    app: RuntimeSupervisorApplication
    clock: Clock
    finished: list[tuple[str, list[Release]]] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        hooks = RunFinishedHandOver("the test's hook")
        hooks.set(lambda run, rel: self.finished.append((run, rel)))
        self._realizer = partial(realizer_inbox, self.app)
        self._controller = partial(controller_inbox(hooks), self.app)

    def envelope(self, aggregate: str, aggregate_id: str, company: str | None = ACME,
                 actor: Actor = REALIZER) -> dict[str, Any]:  # fmt: skip
        version = self.versions[aggregate_id] = self.versions.get(aggregate_id, 0) + 1
        return {
            "event_id": str(uuid.uuid4()),
            "aggregate": aggregate,
            "aggregate_id": aggregate_id,
            "aggregate_version": version,
            "company_id": company,
            "occurred_at": self.clock.now,
            "actor": actor,
        }

    def publish(self, event: Event, upstream: str = "realizer") -> Tracking:
        """Hand one event to the handler of its upstream, with the next position."""
        position = self.positions[upstream] = self.positions.get(upstream, 0) + 1
        tracking = Tracking(upstream, position)
        handler = self._realizer if upstream == "realizer" else self._controller
        handler(_wire(event), tracking)
        return tracking

    # -- the realizer's facts --------------------------------------------------------------

    def project_workspace(
        self,
        runtime: RuntimeConfig | None = None,
        *,
        cwd: str | None = "/repos/acme",
        company: str = ACME,
    ) -> str:
        pw = str(uuid.uuid4())
        self.publish(ProjectWorkspaceCreated(
            **self.envelope("project_workspace", pw, company), project_id="p-1", name="main",
            cwd=cwd, repo_url="https://git.example/acme.git", repo_ref="main", is_primary=True,
            runtime_config=runtime))  # fmt: skip
        return pw

    def pw_runtime(self, pw: str, runtime: RuntimeConfig | None) -> None:
        self.publish(ProjectWorkspaceRuntimeConfigChanged(
            **self.envelope("project_workspace", pw), project_id="p-1", runtime_config=runtime))  # fmt: skip

    def pw_checkout(self, pw: str, checkout: ManagedCheckout) -> None:
        self.publish(ProjectWorkspaceCheckoutChanged(
            **self.envelope("project_workspace", pw), project_id="p-1", managed_checkout=checkout))  # fmt: skip

    def pw_deleted(self, pw: str) -> None:
        self.publish(ProjectWorkspaceDeleted(**self.envelope("project_workspace", pw),
                                             project_id="p-1"))  # fmt: skip

    def issue(self, identifier: str = "ACME-1", status: str = "in_progress",
              company: str = ACME) -> str:  # fmt: skip
        issue = str(uuid.uuid4())
        self.publish(IssueCreated(
            **self.envelope("issue", issue, company), project_id="p-1", identifier=identifier,
            title=f"Work on {identifier}", status=status))  # type: ignore[arg-type]  # fmt: skip
        return issue

    def issue_status(self, issue: str, from_status: str, to_status: str) -> None:
        self.publish(IssueStatusChanged(
            **self.envelope("issue", issue), from_status=from_status, to_status=to_status,
            is_terminal=to_status in ("done", "cancelled")))  # type: ignore[arg-type]  # fmt: skip

    def issue_deleted(self, issue: str) -> None:
        self.publish(IssueDeleted(**self.envelope("issue", issue), identifier="ACME-1"))

    def workspace(
        self,
        pw: str | None,
        issue: str | None = None,
        *,
        mode: str = "isolated_workspace",
        cwd: str | None = "/worktrees/ACME-1",
        config: ExecutionWorkspaceConfig | None = None,
        company: str = ACME,
    ) -> str:
        ws = str(uuid.uuid4())
        self.publish(WorkspaceRealized(
            **self.envelope("workspace", ws, company), project_id="p-1", project_workspace_id=pw,
            source_issue_id=issue, mode=mode, strategy_type="git_worktree",  # type: ignore[arg-type]
            provider_type="git_worktree", provider_ref=cwd, name="ACME-1", status="active",
            cwd=cwd, repo_url="https://git.example/acme.git", base_ref="origin/main",
            branch_name="ACME-1", node_id="local", created_worktree=True, config=config))  # fmt: skip
        return ws

    def ws_config(self, ws: str, config: ExecutionWorkspaceConfig | None) -> None:
        self.publish(WorkspaceConfigChanged(**self.envelope("workspace", ws), config=config))

    def ws_status(self, ws: str, from_status: str, to_status: str, generation: int = 0) -> None:
        self.publish(WorkspaceStatusChanged(
            **self.envelope("workspace", ws), from_status=from_status, to_status=to_status,  # type: ignore[arg-type]
            lifecycle_generation=generation))  # fmt: skip

    def ws_reused(self, ws: str, *, rebuilt: bool) -> None:
        self.publish(WorkspaceReused(**self.envelope("workspace", ws), issue_id=None,
                                     rebuilt=rebuilt, last_used_at=self.clock.now))  # fmt: skip

    def ws_archive(self, ws: str, generation: int) -> None:
        self.publish(WorkspaceArchiveStarted(**self.envelope("workspace", ws),
                                             lifecycle_generation=generation))  # fmt: skip

    def ws_archived(self, ws: str, generation: int) -> None:
        self.publish(WorkspaceArchived(**self.envelope("workspace", ws),
                                       lifecycle_generation=generation, closed_at=self.clock.now))  # fmt: skip

    def ws_reopened(self, ws: str, generation: int) -> None:
        self.publish(WorkspaceReopened(**self.envelope("workspace", ws),
                                       lifecycle_generation=generation, cwd="/worktrees/ACME-1",
                                       branch_name="ACME-1"))  # fmt: skip

    # -- the controller's facts ------------------------------------------------------------

    def run_started(self, ws: str | None, issue: str | None = None, agent: str = "agent-1",
                    company: str = ACME) -> str:  # fmt: skip
        run = str(uuid.uuid4())
        self.publish(RunStarted(**self.envelope("run", run, company, CONTROLLER), agent_id=agent,
                                issue_id=issue, workspace_id=ws), "controller")  # fmt: skip
        return run

    def run_leased(self, run: str, ws: str, agent: str = "agent-1") -> None:
        self.publish(RunWorkspaceLeased(**self.envelope("run", run, ACME, CONTROLLER),
                                        agent_id=agent, workspace_id=ws), "controller")  # fmt: skip

    def run_finished(self, run: str, status: str = "succeeded", ws: str | None = None) -> None:
        self.publish(RunFinished(**self.envelope("run", run, ACME, CONTROLLER), agent_id="agent-1",
                                 workspace_id=ws, status=status), "controller")  # type: ignore[arg-type]  # fmt: skip

    # -- shortcuts -------------------------------------------------------------------------

    def target(self, ws: str | None = None, pw: str | None = None) -> RuntimeTarget:
        return self.app.target(ACME, workspace_id=ws, project_workspace_id=pw)

    def start(self, target: RuntimeTarget, name: str = "web", *, port: int | None = None,
              index: int | None = 0, run: bool = True, **fields: Any) -> str:  # fmt: skip
        """Record a start (and, with ``run``, its readiness)."""
        fields.setdefault("workspace_command_id", f"service:{name}")
        fields.setdefault("cwd", target.cwd or "/")
        service_id = self.app.begin_start(target, service_name=name, command=f"serve {name}",
                                          port=port, service_index=index, **fields)  # fmt: skip
        if run:
            self.app.mark_running(service_id, url=f"http://127.0.0.1:{port}" if port else None,
                                  pid=4000 + len(self.app.services), pgid=4000, process_start_time=1)  # fmt: skip
        return service_id


def runtime_of(*services: ServiceSpec) -> RuntimeConfig:
    """A ``{services: [...]}`` runtime config."""
    return RuntimeConfig(services=list(services))
