"""Use cases of agents: create, update, delete (the board's, and Clipyard itself: agents *write*,
ARCHITECTURE §5.1). The run a principal names (``X-Run-Id``) is checked before anything is saved
(``UseCaseBase._acting_for``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from heartbeat_controller.domain import Agent, InvalidInputError, ValidationError
from heartbeat_controller.domain.adapter_config import (
    config_as_dict,
    shape_hint,
    validate_adapter_config,
)
from heartbeat_controller.usecases.base import UseCaseBase
from servicekit.access import Access, AccessDeniedError, Action, ActorKind, Resource

if TYPE_CHECKING:
    from contracts.agents import AgentView, CreateAgent, UpdateAgent
    from contracts.base import Principal
    from heartbeat_controller.domain.records import AgentChanges

__all__ = ["AgentUseCases"]


def _check_name(name: str) -> str:
    name = name.strip()
    if not 1 <= len(name) <= 200:
        raise ValidationError("name: send 1 to 200 characters.", field="name")
    return name


def _check_limits(max_runs: int | None, interval: int | None) -> None:
    if max_runs is not None and not 1 <= max_runs <= 50:
        raise ValidationError(
            "maxConcurrentRuns: send a number from 1 to 50.", field="maxConcurrentRuns"
        )
    if interval is not None and interval < 10:
        raise ValidationError(
            "heartbeatIntervalSec: send 10 seconds or more, or null for no timer.",
            field="heartbeatIntervalSec",
        )


def _not_admin(access: Access, what: str) -> None:
    """The admin key reaches agents only to grant or take back their trust.

    Raises:
        AccessDeniedError: The admin key (403).
    """
    if access.kind is ActorKind.ADMIN:
        raise AccessDeniedError(
            f"The admin key does not {what} agents (a company's board key does); it only grants "
            'or takes back host trust: PATCH /api/agents/{agentId} {"trustLevel": ...}.',
            actorKind="admin",
            resource="agent",
            action="write",
        )


TRUST_REVOKED = (
    "trust is granted only by the admin key now (a board key marked this agent trusted): it "
    "runs contained until an admin makes it trusted again"
)


def _changes_of(cmd: UpdateAgent) -> AgentChanges:
    """The fields ``cmd`` sets (those not left out), as sent."""
    changes: AgentChanges = {}
    if not isinstance(cmd.name, msgspec.UnsetType):
        changes["name"] = cmd.name
    if not isinstance(cmd.adapter_type, msgspec.UnsetType):
        changes["adapter_type"] = cmd.adapter_type
    if not isinstance(cmd.adapter_config, msgspec.UnsetType):
        changes["adapter_config"] = cmd.adapter_config
    if not isinstance(cmd.trust_level, msgspec.UnsetType):
        changes["trust_level"] = cmd.trust_level
    if not isinstance(cmd.max_concurrent_runs, msgspec.UnsetType):
        changes["max_concurrent_runs"] = cmd.max_concurrent_runs
    if not isinstance(cmd.heartbeat_interval_sec, msgspec.UnsetType):
        changes["heartbeat_interval_sec"] = cmd.heartbeat_interval_sec
    return changes


def _check_trust(access: Access, changes: AgentChanges, current: Agent) -> str | None:
    """Who grants trust with this change (the admin's id), or None; refuse what no one may.

    Raises:
        AccessDeniedError: A board key making an agent trusted, or the admin key changing
            anything but ``trustLevel`` (403 naming the field).
    """
    admin = access.kind is ActorKind.ADMIN
    if admin:
        other = sorted(name for name in changes if name != "trust_level")
        if other:
            raise AccessDeniedError(
                "The admin key changes only an agent's trustLevel; its company's board key "
                f"changes the rest ({', '.join(other)}).",
                field=other[0],
            )
        return access.actor_id if changes.get("trust_level") == "trusted" else None
    runs_other = (
        changes.get("adapter_type", current.adapter_type) != current.adapter_type
        or changes.get("adapter_config", current.adapter_config) != current.adapter_config
    )
    if current.trusted and runs_other:
        # The admin trusted what the agent ran: whatever the board makes it run instead is
        # untrusted until an admin trusts it again.
        changes["trust_level"] = "untrusted"
        return None
    if changes.get("trust_level") == "trusted" and not current.trusted:
        raise AccessDeniedError(
            "Only the admin key makes an agent trusted (it then runs unconfined on the host): "
            'PATCH /api/agents/{agentId} {"trustLevel": "trusted"} with the admin key.',
            field="trustLevel",
        )
    return None


class AgentUseCases(UseCaseBase):
    """Agents (API.md "Agents, wakes, runs")."""

    def create_agent(self, principal: Principal, cmd: CreateAgent) -> AgentView:
        """Create an agent in the principal's company (a board key or session).

        Raises:
            AccessDeniedError: An agent key, run token or the admin key (403).
            InvalidInputError: No company to create it in (Clipyard itself, acting for none).
            ValidationError: A bad name, limit or ``adapterConfig`` (``details.field``).
            NotFoundError: ``X-Run-Id`` names no run of the company (``details.field``).
        """
        access = Access.of(principal)
        access.reach(Resource.AGENT, Action.WRITE)
        _not_admin(access, "create")
        if access.company_id is None:
            raise InvalidInputError(
                "An agent belongs to a company: create it with that company's key or path.",
                field="companyId",
            )
        if cmd.trust_level == "trusted":
            raise AccessDeniedError(
                "Only the admin key makes an agent trusted (it then runs unconfined on the host): "
                'create it untrusted, then PATCH /api/agents/{agentId} {"trustLevel": '
                '"trusted"} with the admin key.',
                field="trustLevel",
            )
        name = _check_name(cmd.name)
        _check_limits(cmd.max_concurrent_runs, cmd.heartbeat_interval_sec)
        config = validate_adapter_config(cmd.adapter_type, cmd.adapter_config)
        with self._acting_for(principal, "agent created"):
            agent = Agent(
                company_id=access.company_id,
                name=name,
                adapter_type=cmd.adapter_type,
                adapter_config=config_as_dict(config),
                trust_level=cmd.trust_level,
                max_concurrent_runs=cmd.max_concurrent_runs,
                heartbeat_interval_sec=cmd.heartbeat_interval_sec,
                at=self.now(),
            )
        self.save(agent)
        return agent.view()

    def revoke_board_trust(self) -> int:
        """At start: an agent marked ``trusted`` by a board key (before only an admin could)
        becomes untrusted, its event saying why; returns how many did."""
        ungranted = [
            a
            for a in self.agents.values()
            if not a.deleted and a.trust_level == "trusted" and not a.trusted
        ]
        for current in ungranted:
            agent: Agent = self._load(str(current.id))
            with self._system(TRUST_REVOKED):
                agent.update({"trust_level": "untrusted"}, self.now())
            self.save(agent)
        return len(ungranted)

    def update_agent(self, principal: Principal, cmd: UpdateAgent) -> AgentView:
        """Change an agent's settings; absent fields stay (``heartbeatIntervalSec: null`` stops
        its timer). A new ``adapterType`` needs a config of that type.

        Raises:
            NotFoundError: No such live agent in the company, or ``X-Run-Id`` names no run of
                the company (``details.field``).
            AccessDeniedError: An agent key, run token or the admin key (403).
            ValidationError: A bad field (``details.field``).
        """
        access = Access.of(principal)
        access.reach(Resource.AGENT, Action.WRITE)
        current = self.live_agent(access, cmd.agent_id)
        changes = _changes_of(cmd)
        granted_by = _check_trust(access, changes, current)
        if "name" in changes:
            changes["name"] = _check_name(changes["name"])
        _check_limits(changes.get("max_concurrent_runs"), changes.get("heartbeat_interval_sec"))
        new_type = changes.get("adapter_type", current.adapter_type)
        if new_type != current.adapter_type and "adapter_config" not in changes:
            raise ValidationError(
                f"adapterConfig: changing adapterType to {new_type} needs an adapterConfig of "
                f"that type. {shape_hint(new_type)}",
                field="adapterConfig",
            )
        if "adapter_type" in changes or "adapter_config" in changes:
            adapter_type = changes.get("adapter_type", current.adapter_type)
            raw = changes.get("adapter_config", current.adapter_config)
            changes["adapter_config"] = config_as_dict(validate_adapter_config(adapter_type, raw))
        agent: Agent = self._load(cmd.agent_id)
        with self._acting_for(principal, "agent updated"):
            agent.update(changes, self.now(), granted_by=granted_by)
        self.save(agent)
        return agent.view()

    def delete_agent(self, principal: Principal, agent_id: str) -> list[str]:
        """Delete an agent: its queued runs end ``cancelled`` (``agent_deleted``) at once, its
        running ones are asked to cancel; ``AgentDeleted`` is saved last.

        Returns:
            The ids of its running runs, to be cancelled by their run tasks.

        Raises:
            NotFoundError: No such live agent in the company, or ``X-Run-Id`` names no run of
                the company (``details.field``).
            AccessDeniedError: An agent key, run token or the admin key (403).
        """
        access = Access.of(principal)
        access.reach(Resource.AGENT, Action.WRITE)
        _not_admin(access, "delete")
        self.live_agent(access, agent_id)
        at = self.now()
        events: list[Any] = []
        handed: list[str] = []
        with self._acting_for(principal, "agent deleted"):
            for run_id in [r for r in self.queued if self.runs[r].agent_id == agent_id]:
                run = self._load_run(run_id)
                run.request_cancel(at)
                more, got = self._finish_events(
                    run, "cancelled", "agent_deleted", "The agent was deleted.", at
                )
                events += more
                handed += got
            running = list(self.running_by_agent.get(agent_id, []))
            for run_id in running:
                run = self._load_run(run_id)
                if not run.cancel_requested:
                    run.request_cancel(at)
                    events += run.collect_events()
            agent: Agent = self._load(agent_id)
            agent.delete(at)
            events += agent.collect_events()
        self.save(*events)
        self._handed(handed)
        return running
