"""API keys: issue one, revoke one or a deleted agent's, read them, authenticate a clear key."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from api_gateway.domain import (
    AgentNotFoundError,
    ApiKey,
    ApiKeyNotFoundError,
    DeletedAgent,
    UnauthenticatedError,
    hash_secret,
    new_key,
)
from api_gateway.usecases.companies import CompanyUseCases

if TYPE_CHECKING:
    from eventsourcing.persistence import Tracking

    from api_gateway.readmodels import KeyRecord

__all__ = ["ApiKeyUseCases"]


class ApiKeyUseCases(CompanyUseCases):
    """The API-key commands and queries (mixed into the gateway's application)."""

    def create_api_key(
        self, company_id: str, name: str, kind: str, agent_id: str | None = None
    ) -> tuple[KeyRecord, str]:
        """Issue a key for a company; return its record and the clear key (shown once).

        An agent key's agent is confirmed with the heartbeat controller by the caller first;
        an agent whose delete the controller inbox has heard since (on this same store thread)
        gets no key.

        Raises:
            CompanyNotFoundError: No such company.
            AgentNotFoundError: The agent was deleted (404 naming ``agentId``).
        """
        self.company(company_id)
        if kind == "agent" and agent_id is not None and agent_id in self.deleted_agents:
            raise AgentNotFoundError(
                f"There is no agent {agent_id} in this company: it was deleted. Create a new "
                "agent (POST /api/companies/{companyId}/agents) and a key for it.",
                agentId=agent_id,
            )
        key = new_key(kind)
        api_key = ApiKey.issue(
            company_id=company_id,
            name=name,
            kind=kind,
            agent_id=agent_id,
            key_hash=hash_secret(key),
        )
        self.save(api_key)
        return self.keys_by_id[str(api_key.id)], key

    def revoke_api_key(self, key_id: str) -> KeyRecord:
        """Revoke a key at once (revoking a revoked key changes nothing)."""
        api_key: ApiKey = self.repository.get(UUID(self.api_key(key_id).id))
        if api_key.revoke():
            self.save(api_key)
        return self.keys_by_id[key_id]

    def revoke_agent_keys(self, company_id: str, agent_id: str, tracking: Tracking) -> int:
        """The agent was deleted (the controller's ``agent.deleted.v1``): revoke its live keys
        and remember the agent as deleted (no later key for it), in one save with the inbox
        position; return how many keys were revoked."""
        live = [
            k
            for k in self.keys_by_id.values()
            if k.kind == "agent"
            and k.agent_id == agent_id
            and k.company_id == company_id
            and k.revoked_at is None
        ]
        keys: list[ApiKey] = [self.repository.get(UUID(k.id)) for k in live]
        for api_key in keys:
            api_key.revoke()
        marks: list[DeletedAgent] = []
        if agent_id not in self.deleted_agents:
            marks.append(DeletedAgent(company_id=company_id, agent_id=agent_id))
        self.save_with_tracking(*keys, *marks, tracking=tracking)
        return len(keys)

    def api_key(self, key_id: str) -> KeyRecord:
        """The key with this id, or ``ApiKeyNotFoundError``."""
        if (record := self.keys_by_id.get(key_id)) is None:
            raise ApiKeyNotFoundError(f"There is no API key {key_id}.", keyId=key_id)
        return record

    def list_api_keys(
        self, company_id: str, limit: int, offset: int
    ) -> tuple[list[KeyRecord], int]:
        """A page of a company's keys (revoked ones included), oldest first, and the total."""
        self.company(company_id)
        rows = sorted(
            (k for k in self.keys_by_id.values() if k.company_id == company_id),
            key=lambda k: (k.created_at, k.id),
        )
        return rows[offset : offset + limit], len(rows)

    def authenticate_key(self, key: str) -> KeyRecord:
        """The live key record of a clear key, or ``UnauthenticatedError`` saying why not."""
        key_id = self.keys_by_hash.get(hash_secret(key))
        if key_id is None:
            raise UnauthenticatedError(
                "This key is not known; check it, or ask an admin or a board member for a key."
            )
        record = self.keys_by_id[key_id]
        if record.revoked_at is not None:
            raise UnauthenticatedError(
                f"This key ({record.name}) was revoked; ask a board member for a new key.",
                keyId=record.id,
            )
        return record
