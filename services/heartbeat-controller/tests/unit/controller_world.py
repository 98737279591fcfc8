"""Helpers of the controller's unit tests: a pinned clock, principals, the application on the
in-memory store (each event checked for publication before it is saved, as the outbox relay
does), and ``World``, which feeds real contract events of the realizer and the supervisor into
the application (encoded and decoded as the inbox does) and drives runs as the orchestration
would."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from eventsourcing.persistence import Tracking

from contracts.agents import AgentView, CreateAgent, UpdateAgent, WakeAccepted, WakeAgent
from contracts.base import Actor, Event, Principal
from contracts.events import AnyEvent
from contracts.slot_events import SlotAdapterFinished
from contracts.slots import AdapterLaunched, SlotGrant
from contracts.workspace_events import IssueAssigned, IssueCreated, IssueWorkspaceLinked
from eventstore.publication import check_publishable
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.domain.stage_detail import SlotDetail
from heartbeat_controller.publishing import to_contract

ACME = "c-acme"
OTHER = "c-other"
START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
BOARD = Principal(company_id=ACME, actor=Actor(type="board", id="key-board"))
ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="admin"))
SYSTEM = Principal(company_id=None, actor=Actor(type="system", id="workspace-realizer"))
"""Clipyard itself (another service), acting for no company."""
OTHER_BOARD = Principal(company_id=OTHER, actor=Actor(type="board", id="key-other"))
PROCESS = {"command": ["python3", "agent.py"], "timeoutSec": 60}


def agent_principal(agent_id: str, company: str = ACME) -> Principal:
    """An agent key's principal."""
    return Principal(company_id=company, actor=Actor(type="agent", id=agent_id))


def acting_for(principal: Principal, run_id: str) -> Principal:
    """``principal`` as the gateway passes it with ``X-Run-Id: <run_id>`` (any key)."""
    return msgspec.structs.replace(principal, run_id=run_id)


def published_since(app: HeartbeatControllerApplication, after: int) -> list[Any]:
    """The public events saved after notification ``after``, as the outbox publishes them."""
    stored = app.recorder.select_notifications(start=after, limit=1000, inclusive_of_start=False)
    contracts = (to_contract(app.mapper.to_domain_event(n)) for n in stored)
    return [c for c in contracts if c is not None]


def run_principal(agent_id: str, run_id: str, issue_id: str | None) -> Principal:
    """A run token's principal."""
    return Principal(
        company_id=ACME,
        actor=Actor(type="agent", id=agent_id),
        run_id=run_id,
        issue_id=issue_id,
        run_bound=True,
    )


@dataclass
class Clock:
    """The application's notion of now, moved by hand."""

    now: datetime = START

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def make_app(clock: Clock) -> HeartbeatControllerApplication:
    """The controller's application on the in-memory store, its clock pinned."""
    application = HeartbeatControllerApplication(service="controller")
    application.now = lambda: clock.now  # type: ignore[method-assign]
    application.publication_check = lambda event: check_publishable(
        to_contract, event, service="controller"
    )
    return application


def _as_received(event: Event) -> Any:
    """The event as the inbox receives it: encoded, then decoded through the public union."""
    return msgspec.json.decode(msgspec.json.encode(event), type=AnyEvent)


@dataclass
class World:
    """Feeds the application as the realizer, the supervisor and the orchestration would."""

    app: HeartbeatControllerApplication
    clock: Clock
    positions: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)

    def _envelope(self, aggregate: str, aggregate_id: str, company: str) -> dict[str, Any]:
        version = self.versions.get(aggregate_id, 0) + 1
        self.versions[aggregate_id] = version
        return {
            "event_id": str(uuid.uuid4()),
            "aggregate": aggregate,
            "aggregate_id": aggregate_id,
            "aggregate_version": version,
            "company_id": company,
            "occurred_at": self.clock.now,
            "actor": Actor(type="board", id="key-board"),
        }

    def tracking(self, upstream: str = "realizer") -> Tracking:
        position = self.positions.get(upstream, 0) + 1
        self.positions[upstream] = position
        return Tracking(upstream, position)

    # -- the realizer's issues -----------------------------------------------------------------

    def issue(
        self,
        *,
        company: str = ACME,
        assignee: str | None = None,
        status: str = "todo",
        workspace: str | None = None,
    ) -> str:
        """A new issue (and its current workspace, when given); returns its id."""
        issue_id = str(uuid.uuid4())
        created = IssueCreated(
            **self._envelope("issue", issue_id, company),
            project_id="p-1",
            identifier="ACME-1",
            title="Fix it",
            status=status,  # type: ignore[arg-type]
            assignee_agent_id=assignee,
        )
        self.app.note_issue_event(_as_received(created), self.tracking())
        if workspace is not None:
            self.link(issue_id, workspace, company=company)
        return issue_id

    def link(self, issue_id: str, workspace: str | None, *, company: str = ACME) -> None:
        linked = IssueWorkspaceLinked(
            **self._envelope("issue", issue_id, company), execution_workspace_id=workspace
        )
        self.app.note_issue_event(_as_received(linked), self.tracking())

    def assign(self, issue_id: str, agent_id: str | None, *, company: str = ACME) -> Any:
        assigned = IssueAssigned(
            **self._envelope("issue", issue_id, company), assignee_agent_id=agent_id
        )
        return self.app.note_issue_event(_as_received(assigned), self.tracking())

    # -- agents and wakes ----------------------------------------------------------------------

    def agent(self, *, max_runs: int = 1, interval: int | None = None, **fields: Any) -> str:
        trusted = fields.pop("trust_level", "untrusted") == "trusted"
        created: AgentView = self.app.create_agent(
            fields.pop("principal", BOARD),
            CreateAgent(
                principal=BOARD,
                name=fields.pop("name", "coder"),
                adapter_type=fields.pop("adapter_type", "process"),
                adapter_config=fields.pop("adapter_config", PROCESS),
                max_concurrent_runs=max_runs,
                heartbeat_interval_sec=interval,
                **fields,
            ),
        )
        if trusted:  # only the admin key makes an agent trusted
            self.app.update_agent(ADMIN, UpdateAgent(principal=ADMIN, agent_id=str(created.id),
                                                     trust_level="trusted"))  # fmt: skip
        return str(created.id)

    def wake(
        self,
        agent_id: str,
        issue_id: str | None = None,
        *,
        principal: Principal = BOARD,
        **more: Any,
    ) -> WakeAccepted:
        return self.app.wake(
            principal, WakeAgent(principal=principal, agent_id=agent_id, issue_id=issue_id, **more)
        )

    # -- the orchestration ---------------------------------------------------------------------

    def claim(self) -> list[str]:
        return [c.run_id for c in self.app.claim_runnable(self.clock.now)]

    def launch(self, run_id: str) -> None:
        """Slot granted and adapter launched, as the run task records them."""
        self.app.record_stage(run_id, "slot_acquisition")
        grant = SlotGrant(slot_id=f"slot-{run_id}", type="local_stdio", index=0,
                          contained=True, sandbox="bwrap")  # fmt: skip
        self.app.record_slot(run_id, grant)
        detail = SlotDetail(slot_id=grant.slot_id, slot_type=grant.type,
                            contained=grant.contained, sandbox=grant.sandbox)  # fmt: skip
        self.app.record_stage(run_id, "adapter_launch", detail)
        self.app.record_launch(run_id, AdapterLaunched(
            slot_id=grant.slot_id, run_id=run_id, pid=4242, pgid=4242,
            started_at=self.clock.now, deadline=self.clock.now + timedelta(seconds=60),
        ))  # fmt: skip

    def adapter_end(self, run_id: str, end: str = "exited", exit_code: int | None = 0) -> Any:
        run = self.app.runs[run_id]
        finished = SlotAdapterFinished(
            **{**self._envelope("slot", f"slot-{run_id}", run.company_id), "run_id": run_id},
            agent_id=run.agent_id,
            end=end,  # type: ignore[arg-type]
            exit_code=exit_code,
            usage={"inputTokens": 10},
            result={"summary": "done"},
            stdout_excerpt="hello\n",
            stderr_excerpt="",
            log_bytes=6,
        )
        return self.app.record_adapter_end(_as_received(finished), self.tracking("supervisor"))
