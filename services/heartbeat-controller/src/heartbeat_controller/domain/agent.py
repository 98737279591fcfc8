"""Agents: an adapter type and its checked config, a trust level, limits and an optional
heartbeat interval (API.md "Agents, wakes, runs"). Deleting one is a fact too (its keys are
revoked by the gateway when it hears ``agent.deleted.v1``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final

from eventsourcing.domain import event

from contracts.agents import AgentView
from eventstore import CompanyScoped

if TYPE_CHECKING:
    from contracts.agents import AdapterType
    from heartbeat_controller.domain.records import (
        AgentChanges,
        AgentField,
        AgentRecord,
        JsonObject,
    )

__all__ = ["AGENT_FIELDS", "Agent"]

AGENT_FIELDS: Final[tuple[AgentField, ...]] = (
    "name",
    "adapter_type",
    "adapter_config",
    "trust_level",
    "max_concurrent_runs",
    "heartbeat_interval_sec",
)
"""The settable fields of an agent (snake_case), in the order of ``AgentView``."""

_CAMEL: Final[dict[AgentField, str]] = {
    "name": "name",
    "adapter_type": "adapterType",
    "adapter_config": "adapterConfig",
    "trust_level": "trustLevel",
    "max_concurrent_runs": "maxConcurrentRuns",
    "heartbeat_interval_sec": "heartbeatIntervalSec",
}


class Agent(CompanyScoped):
    """One agent of a company (see the module's docstring)."""

    trust_granted_by: str | None = None
    """The admin who made it ``trusted`` (None: untrusted, or marked trusted by a board key
    before only an admin could, which counts for nothing)."""

    @event("Created")
    def __init__(
        self,
        *,
        company_id: str,
        name: str,
        adapter_type: AdapterType,
        adapter_config: JsonObject,
        trust_level: str,
        max_concurrent_runs: int,
        heartbeat_interval_sec: int | None,
        at: datetime,
    ) -> None:
        self.company_id = company_id
        self.name = name
        self.adapter_type = adapter_type
        self.adapter_config = dict(adapter_config)
        self.trust_level = trust_level
        self.max_concurrent_runs = max_concurrent_runs
        self.heartbeat_interval_sec = heartbeat_interval_sec
        self.created_at = at
        self.updated_at = at
        self.timer_since: datetime = at
        """When the heartbeat interval was last set (timer wakes count from here at first)."""
        self.deleted = False

    @property
    def trusted(self) -> bool:
        """True for ``trustLevel: trusted`` granted by an admin (runs unconfined, any workspace
        mode; docs/design/isolation.md)."""
        return self.trust_level == "trusted" and self.trust_granted_by is not None

    def record(self) -> AgentRecord:
        """The settable fields as they are now."""
        return {
            "name": self.name,
            "adapter_type": self.adapter_type,
            "adapter_config": self.adapter_config,
            "trust_level": self.trust_level,
            "max_concurrent_runs": self.max_concurrent_runs,
            "heartbeat_interval_sec": self.heartbeat_interval_sec,
        }

    def update(
        self, changes: AgentChanges, at: datetime, *, granted_by: str | None = None
    ) -> list[str]:
        """Apply ``changes`` (a subset of :data:`AGENT_FIELDS`, already checked; a new
        ``trusted`` level needs ``granted_by``, the admin's id); return the changed fields
        (camelCase). One event carries the whole record after the change; none when nothing
        moved."""
        after: AgentRecord = {**self.record(), **changes}
        changed = [_CAMEL[name] for name in AGENT_FIELDS if after[name] != getattr(self, name)]
        grant = self.trust_granted_by
        if after["trust_level"] != "trusted":
            grant = None
        elif granted_by is not None:
            grant = granted_by
        if changed or grant != self.trust_granted_by:
            self._updated(changed_fields=changed, at=at, trust_granted_by=grant, **after)
        return changed

    @event("Updated")
    def _updated(
        self,
        *,
        name: str,
        adapter_type: AdapterType,
        adapter_config: JsonObject,
        trust_level: str,
        max_concurrent_runs: int,
        heartbeat_interval_sec: int | None,
        changed_fields: list[str],
        at: datetime,
        trust_granted_by: str | None = None,
    ) -> None:
        self.trust_granted_by = trust_granted_by
        if heartbeat_interval_sec != self.heartbeat_interval_sec:
            self.timer_since = at
        self.name, self.adapter_type = name, adapter_type
        self.adapter_config = dict(adapter_config)
        self.trust_level, self.max_concurrent_runs = trust_level, max_concurrent_runs
        self.heartbeat_interval_sec = heartbeat_interval_sec
        self.updated_at = at

    def delete(self, at: datetime) -> bool:
        """Delete the agent; False when it already was."""
        if self.deleted:
            return False
        self._deleted(name=self.name, at=at)
        return True

    @event("Deleted")
    def _deleted(self, name: str, at: datetime) -> None:
        self.deleted = True
        self.updated_at = at

    def view(self) -> AgentView:
        """The agent as the API shows it."""
        return AgentView(
            id=str(self.id),
            company_id=self.company_id,
            name=self.name,
            adapter_type=self.adapter_type,
            adapter_config=dict(self.adapter_config),
            trust_level=self.trust_level,  # type: ignore[arg-type]
            max_concurrent_runs=self.max_concurrent_runs,
            heartbeat_interval_sec=self.heartbeat_interval_sec,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )
