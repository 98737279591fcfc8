"""An API key: a board or agent key of one company, of which only the hash is stored.

Pure: no I/O.
"""

from __future__ import annotations

from typing import Literal

from eventsourcing.domain import event

from api_gateway.domain.errors import KeyKindNotAllowedError
from api_gateway.domain.names import check_name
from eventstore import ClipyardAggregate

__all__ = ["ApiKey", "ApiKeyKind"]

ApiKeyKind = Literal["board", "agent"]


class ApiKey(ClipyardAggregate):
    """A board or agent key of one company. Only the key's hash is stored."""

    class Created(ClipyardAggregate.Created):
        """A key was issued (public without its hash: ``api_key.created.v1``)."""

        company_id: str
        name: str
        kind: str
        agent_id: str | None
        key_hash: str

    class Revoked(ClipyardAggregate.Event):
        """The key was revoked (public: ``api_key.revoked.v1``)."""

        company_id: str

    @classmethod
    def issue(
        cls, *, company_id: str, name: str, kind: str, agent_id: str | None, key_hash: str
    ) -> ApiKey:
        """Create a key record for a key already generated (and hashed) by the caller.

        Raises:
            InvalidNameError: The name is empty or too long.
            KeyKindNotAllowedError: ``agentId`` given for a board key, or missing for an agent key.
        """
        name = check_name(name, what="key")
        if kind == "board" and agent_id is not None:
            raise KeyKindNotAllowedError(
                "A board key belongs to no agent; leave out agentId.", field="agentId"
            )
        if kind == "agent" and not agent_id:
            raise KeyKindNotAllowedError(
                "An agent key needs agentId: the agent it acts for.", field="agentId"
            )
        return cls(
            company_id=company_id, name=name, kind=kind, agent_id=agent_id, key_hash=key_hash
        )

    @event(Created)
    def __init__(
        self, *, company_id: str, name: str, kind: str, agent_id: str | None, key_hash: str
    ) -> None:
        self.company_id = company_id
        self.name = name
        self.kind = kind
        self.agent_id = agent_id
        self.key_hash = key_hash
        self.revoked = False

    def revoke(self) -> bool:
        """Revoke the key; return False (and record nothing) when it was already revoked."""
        if self.revoked:
            return False
        self._revoked(company_id=self.company_id)
        return True

    @event(Revoked)
    def _revoked(self, company_id: str) -> None:
        # company_id rides on the event so that its public contract needs nothing else.
        self.revoked = True
