"""The realizer's copy of an agent (fed by the heartbeat-controller's ``agent.created.v1`` and
``agent.deleted.v1``): which company it belongs to and whether it was deleted. An issue's
``assigneeAgentId`` must name a live agent of the issue's company (ARCHITECTURE §5.1); the copy
answers that without a request, the controller itself when the copy does not know the agent yet."""

from __future__ import annotations

from typing import Final
from uuid import UUID, uuid5

from eventsourcing.domain import event

from eventstore import ClipyardAggregate

__all__ = ["AgentCopy", "agent_copy_id"]

_NAMESPACE: Final = UUID("5b8e2f41-7c3d-5e92-8a1f-4d6c9b0e2a73")


def agent_copy_id(agent_id: str) -> UUID:
    """The id of the copy of agent ``agent_id`` (a UUID5: the same on every rebuild)."""
    return uuid5(_NAMESPACE, f"agent:{agent_id}")


class AgentCopy(ClipyardAggregate):
    """An agent as the realizer knows it: its company, and whether it was deleted."""

    @staticmethod
    def create_id(agent_id: str) -> UUID:
        """One copy per agent."""
        return agent_copy_id(agent_id)

    @event("Copied")
    def __init__(self, *, agent_id: str, company_id: str) -> None:
        self.agent_id = agent_id
        self.company_id = company_id
        self.deleted = False

    @event("Deleted")
    def delete(self) -> None:
        """The agent was deleted: no issue may be assigned to it any more."""
        self.deleted = True
