"""Agents the gateway heard were deleted (the heartbeat controller's ``agent.deleted.v1``).

One private :class:`DeletedAgent` aggregate per agent (its id derives from the agent's), saved by
the controller inbox in the same save as the revocation of the agent's keys. The read model of
the application (``deleted_agents``) lets ``create_api_key`` refuse a key for a deleted agent on
the store's thread, so that a delete handled between the controller's confirmation of the agent
and the key's creation can never leave a live key behind. Pure: no I/O.
"""

from __future__ import annotations

import sys
from typing import Final
from uuid import UUID, uuid5

from eventsourcing.domain import event

from eventstore import ClipyardAggregate
from eventstore.topics import keep_old_topics

__all__ = ["DeletedAgent"]

_DELETED_NAMESPACE: Final = UUID("a1d7c3e9-4b2f-5e60-8c1d-2f9e7b3a5c48")


class DeletedAgent(ClipyardAggregate):
    """The mark of one deleted agent (private: never published)."""

    class Recorded(ClipyardAggregate.Created):
        """The controller said the agent was deleted (private)."""

        company_id: str
        agent_id: str

    @staticmethod
    def create_id(agent_id: str) -> UUID:
        """The mark's aggregate id: a UUID5 of the agent id."""
        return uuid5(_DELETED_NAMESPACE, agent_id)

    @event(Recorded)
    def __init__(self, *, company_id: str, agent_id: str) -> None:
        self.company_id = company_id
        self.agent_id = agent_id


keep_old_topics("api_gateway.deleted_agents", sys.modules[__name__])
