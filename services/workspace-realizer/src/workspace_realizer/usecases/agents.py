"""Use cases of the controller's agent events: the realizer's copy of which company each agent
belongs to, and whether it was deleted (kept in the realizer's own store, so ``replay_verify``
rebuilds it from the realizer's events like every other read model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts.run_events import AgentCreated, AgentDeleted
from workspace_realizer.domain import AgentCopy
from workspace_realizer.usecases.queries import Queries

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

__all__ = ["AGENT_EVENTS", "AgentCopyUseCases"]

AGENT_EVENTS = (AgentCreated, AgentDeleted)
"""The controller's events this copy follows (``agent.updated.v1`` changes neither field)."""


class AgentCopyUseCases(Queries):
    """Follow the controller's agents."""

    def note_agent_event(self, event: AgentCreated | AgentDeleted, tracking: Tracking) -> None:
        """Apply ``agent.created.v1`` or ``agent.deleted.v1``, saved with its inbox position.

        A redelivered creation changes nothing; a deletion of an agent the copy never saw (its
        creation came before this copy existed) is kept as a deleted copy, so the controller is
        not asked about it again. An event without a company only advances the position.
        """
        agent_id, company_id = event.aggregate_id, event.company_id
        copy = self.agent_copy(agent_id)
        if company_id is None or (isinstance(event, AgentCreated) and copy is not None):
            self.save_with_tracking(tracking=tracking)
            return
        agent: AgentCopy = (
            self.load(str(copy.id))
            if copy is not None
            else AgentCopy(agent_id=agent_id, company_id=company_id)
        )
        if isinstance(event, AgentDeleted) and not agent.deleted:
            agent.delete()
        self.save_with_tracking(agent, tracking=tracking)
