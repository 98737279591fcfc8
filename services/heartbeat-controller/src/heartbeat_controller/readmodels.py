"""The controller's read models: a current copy of every aggregate it owns, kept by projecting
each stored event onto it with the aggregate's own logic, the indexes the scheduler and the
queries need, and the queries themselves (checked against the principal).

Rebuilt from the notification log at start and kept current after each save
(``ServiceApplication``); queries read these copies on the store thread, use cases load
aggregates from the repository.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar
from uuid import UUID

from contracts.agents import AgentView, RunFilters, RunView
from contracts.base import Principal
from contracts.workspace_views import Page
from eventstore import ServiceApplication, aggregate_state
from eventstore.privacy import DEFAULT_PRIVATE_FIELDS
from heartbeat_controller.domain import Agent, IssueCopy, NotFoundError, Run, WakeupRequest
from servicekit.access import Access, Action, Resource

__all__ = ["HeartbeatReadModels", "idempotency_key", "target_key"]

_OWN_EVENTS = (Agent.Event, WakeupRequest.Event, Run.Event, IssueCopy.Event)
MAX_PAGE = 500


def idempotency_key(agent_id: str, key: str) -> str:
    """The index key of a wake's idempotency key (per agent)."""
    return f"{agent_id}\n{key}"


def target_key(agent_id: str, issue_id: str | None) -> str:
    """The index key of the queued run a wake of ``agent_id`` for ``issue_id`` joins."""
    return f"{agent_id}\n{issue_id or ''}"


def _page(limit: int, offset: int) -> tuple[int, int]:
    return max(0, min(limit, MAX_PAGE)), max(0, offset)


class HeartbeatReadModels(ServiceApplication):
    """Projection of every controller aggregate, its indexes and its queries."""

    private_fields: ClassVar[tuple[str, ...]] = (*DEFAULT_PRIVATE_FIELDS, "headers", "env")
    """Adapter headers and environment may hold the agent's own credentials: never shown in
    audit trails or replay reports."""

    agents: dict[str, Agent]
    """Every agent, deleted ones included (``deleted``)."""
    agents_by_company: dict[str, list[str]]
    """Company -> agent ids, by creation."""
    wakeups: dict[str, WakeupRequest]
    runs: dict[str, Run]
    runs_by_company: dict[str, list[str]]
    """Company -> run ids, oldest first (served newest first)."""
    queued: dict[str, None]
    """Queued run ids in queue order (an ordered set)."""
    running_by_agent: dict[str, list[str]]
    workspace_holders: dict[str, str]
    """Workspace -> the run holding its run lease."""
    workspace_waiters: dict[str, list[str]]
    """Workspace -> running runs waiting for its run lease, first come first."""
    idempotency: dict[str, str]
    """``idempotency_key(agent, key)`` -> the first wake's wakeup request id."""
    queued_by_target: dict[str, str]
    """``target_key(agent, issue)`` -> the queued run a wake joins."""
    issues: dict[str, IssueCopy]
    """Issue id -> the copy of the realizer's issue."""
    last_timer_wake: dict[str, datetime]
    """Agent -> when its last ``timer`` wake was accepted (queued or coalesced)."""
    _objects: dict[UUID, Any]

    def init_read_models(self) -> None:
        """Empty read models (before every rebuild)."""
        self.agents, self.agents_by_company = {}, {}
        self.wakeups, self.runs, self.runs_by_company = {}, {}, {}
        self.queued, self.running_by_agent = {}, {}
        self.workspace_holders, self.workspace_waiters = {}, {}
        self.idempotency, self.queued_by_target = {}, {}
        self.issues, self.last_timer_wake = {}, {}
        self._objects = {}

    # -- projection ----------------------------------------------------------------------------

    def project(self, domain_event: Any) -> None:
        """Apply one stored event to the copy of its aggregate, then index it."""
        if not isinstance(domain_event, _OWN_EVENTS):
            return
        current = self._objects.get(domain_event.originator_id)
        before = _run_marks(current) if isinstance(current, Run) else None
        aggregate: Any = domain_event.mutate(current)
        self._objects[domain_event.originator_id] = aggregate
        key = str(aggregate.id)
        if isinstance(aggregate, Run):
            self._index_run(aggregate, before)
        elif isinstance(aggregate, Agent):
            if current is None:
                self.agents_by_company.setdefault(aggregate.company_id, []).append(key)
            self.agents[key] = aggregate
        elif isinstance(aggregate, WakeupRequest):
            self.wakeups[key] = aggregate
            if current is None:
                self._index_wakeup(aggregate)
        elif isinstance(aggregate, IssueCopy):
            self.issues[aggregate.issue_id] = aggregate

    def _index_wakeup(self, wakeup: WakeupRequest) -> None:
        if wakeup.idempotency_key is not None:
            ident = idempotency_key(wakeup.agent_id, wakeup.idempotency_key)
            self.idempotency.setdefault(ident, str(wakeup.id))
        if wakeup.source == "timer":
            last = self.last_timer_wake.get(wakeup.agent_id)
            if last is None or wakeup.requested_at > last:
                self.last_timer_wake[wakeup.agent_id] = wakeup.requested_at

    def _index_run(self, run: Run, before: tuple[str, str | None, str | None] | None) -> None:
        key = str(run.id)
        status, held, waiting = before if before is not None else (None, None, None)
        self.runs[key] = run
        if before is None:
            self.runs_by_company.setdefault(run.company_id, []).append(key)
        if run.status == "queued" and status is None:
            self.queued[key] = None
            self.queued_by_target[target_key(run.agent_id, run.issue_id)] = key
        if status == "queued" and run.status != "queued":
            self.queued.pop(key, None)
            target = target_key(run.agent_id, run.issue_id)
            if self.queued_by_target.get(target) == key:
                del self.queued_by_target[target]
        if run.status == "running" and status != "running":
            self.running_by_agent.setdefault(run.agent_id, []).append(key)
        if status == "running" and run.status != "running":
            _remove(self.running_by_agent, run.agent_id, key)
        now_held = run.workspace_id if run.holds_workspace else None
        if held != now_held:
            if held is not None and self.workspace_holders.get(held) == key:
                del self.workspace_holders[held]
            if now_held is not None:
                self.workspace_holders[now_held] = key
        if waiting != run.waiting_for:
            if waiting is not None:
                _remove(self.workspace_waiters, waiting, key)
            if run.waiting_for is not None:
                self.workspace_waiters.setdefault(run.waiting_for, []).append(key)

    def read_models(self) -> dict[str, object]:
        """The read models as plain data, for replay verification."""
        return {
            "agents": {k: aggregate_state(a) for k, a in self.agents.items()},
            "agents_by_company": {k: list(v) for k, v in self.agents_by_company.items()},
            "wakeups": {k: aggregate_state(w) for k, w in self.wakeups.items()},
            "runs": {k: aggregate_state(r) for k, r in self.runs.items()},
            "runs_by_company": {k: list(v) for k, v in self.runs_by_company.items()},
            "queued": list(self.queued),
            "running_by_agent": {k: list(v) for k, v in self.running_by_agent.items()},
            "workspace_holders": dict(self.workspace_holders),
            "workspace_waiters": {k: list(v) for k, v in self.workspace_waiters.items()},
            "idempotency": dict(self.idempotency),
            "queued_by_target": dict(self.queued_by_target),
            "issues": {k: aggregate_state(i) for k, i in self.issues.items()},
            "last_timer_wake": dict(self.last_timer_wake),
        }

    # -- lookups -------------------------------------------------------------------------------

    def live_agent(self, access: Access, agent_id: str) -> Agent:
        """The live (not deleted) agent ``agent_id`` of the principal's company.

        Raises:
            NotFoundError: Unknown, deleted, or of another company.
        """
        agent = self.agents.get(agent_id)
        if agent is None or agent.deleted or not access.sees_company(agent.company_id):
            raise NotFoundError(f"There is no agent {agent_id}.", agentId=agent_id)
        return agent

    def visible_run(self, access: Access, run_id: str) -> Run:
        """The run ``run_id`` of the principal's company.

        Raises:
            NotFoundError: Unknown or of another company.
        """
        run = self.runs.get(run_id)
        if run is None or not access.sees_company(run.company_id):
            raise NotFoundError(f"There is no run {run_id}.", runId=run_id)
        return run

    # -- queries -------------------------------------------------------------------------------

    def get_agent(self, principal: Principal, agent_id: str) -> AgentView:
        """One agent → ``AgentView`` (404 for another company's; 403 for the admin key and for
        another agent's key)."""
        access = Access.of(principal)
        access.reach(Resource.AGENT, Action.READ)
        agent = self.live_agent(access, agent_id)
        access.check_agent(agent_id, "read")
        return agent.view()

    def list_agents(
        self, principal: Principal, limit: int = 50, offset: int = 0
    ) -> Page[AgentView]:
        """The company's live agents by creation (an agent key or run token sees only its
        agent; the admin key: 403)."""
        access = Access.of(principal)
        access.reach(Resource.AGENT, Action.READ)
        limit, offset = _page(limit, offset)
        scope = access.scope()
        if scope is None:
            ids = [i for ids in self.agents_by_company.values() for i in ids]
        else:
            ids = self.agents_by_company.get(scope, [])
        agents = [self.agents[i] for i in ids if not self.agents[i].deleted]
        if access.is_agent:
            agents = [a for a in agents if str(a.id) == access.actor_id]
        return Page(items=[a.view() for a in agents[offset : offset + limit]], total=len(agents))

    def get_run(self, principal: Principal, run_id: str) -> RunView:
        """One run → ``RunView`` with excerpts, usage and result (403 for the admin key, for an
        agent's key on another agent's run, and for a run token on any run but its own)."""
        access = Access.of(principal)
        access.reach(Resource.RUN, Action.READ)
        run = self.visible_run(access, run_id)
        access.check_run(run_id, run.agent_id, "read")
        return run.view()

    def list_runs(
        self, principal: Principal, filters: RunFilters, limit: int = 50, offset: int = 0
    ) -> Page[RunView]:
        """The company's runs, newest first, filtered (rows without excerpts, usage, result).
        An agent principal sees only its own runs (403 when it filters on another agent); a run
        token only its own run; the admin key: 403."""
        access = Access.of(principal)
        access.reach(Resource.RUN, Action.READ)
        limit, offset = _page(limit, offset)
        agent_id = filters.agent_id
        if access.is_agent:
            if agent_id is not None:
                access.check_agent(agent_id, "list the runs of")
            agent_id = access.actor_id
        scope = access.scope()
        if scope is None:
            ids = [i for ids in self.runs_by_company.values() for i in ids]
            ids.sort(key=lambda i: self.runs[i].queued_at)
        else:
            ids = self.runs_by_company.get(scope, [])
        rows = [
            run
            for run in (self.runs[i] for i in reversed(ids))
            if (agent_id is None or run.agent_id == agent_id)
            and (filters.issue_id is None or run.issue_id == filters.issue_id)
            and (filters.status is None or run.status == filters.status)
            and (not access.is_run_token or str(run.id) == access.run_id)
        ]
        items = [run.view(full=False) for run in rows[offset : offset + limit]]
        return Page(items=items, total=len(rows))

    def running_runs(self) -> list[RunView]:
        """Every ``running`` run (restart recovery), oldest start first."""
        ids = [i for ids in self.running_by_agent.values() for i in ids]
        runs = sorted((self.runs[i] for i in ids), key=lambda r: r.started_at or r.queued_at)
        return [run.view() for run in runs]

    def run_record(self, run_id: str) -> Run:
        """The read model's copy of a run, with what the view does not show (its slot, launch,
        workspace lease, cancel request); for the orchestration, not to be changed.

        Raises:
            NotFoundError: Unknown run.
        """
        run = self.runs.get(run_id)
        if run is None:
            raise NotFoundError(f"There is no run {run_id}.", runId=run_id)
        return run

    def queued_run_ids(self) -> list[str]:
        """Queued runs in queue order."""
        return list(self.queued)


def _run_marks(run: Run) -> tuple[str, str | None, str | None]:
    """What the indexes of a run depend on: status, the workspace held, the one awaited."""
    return run.status, run.workspace_id if run.holds_workspace else None, run.waiting_for


def _remove(index: dict[str, list[str]], key: str, value: str) -> None:
    values = index.get(key)
    if values is None:
        return
    if value in values:
        values.remove(value)
    if not values:
        del index[key]
