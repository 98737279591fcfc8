"""Stored gateway events -> public contracts (the one translation point; STYLE 13).

Companies and API keys are public (without key material); sessions are private and never leave
the gateway (``None``).
"""

from __future__ import annotations

from typing import Any, Final
from uuid import UUID, uuid5

from api_gateway.domain import ApiKey, Company
from api_gateway.settings import SERVICE_NAME
from contracts.base import Actor, Event
from contracts.gateway import ApiKeyCreated, ApiKeyRevoked, CompanyCreated
from eventstore import rejection_to_contract

__all__ = ["EVENT_NAMESPACE", "to_contract"]

EVENT_NAMESPACE: Final = UUID("0c6f7a4e-2d1b-5f3a-8e9c-6b4d2a1f0e37")
"""Namespace of public event ids: ``uuid5(namespace, "<aggregate id>:<version>")``, so a
republished event keeps its id."""


def _envelope(domain_event: Any, aggregate: str, company_id: str) -> dict[str, Any]:
    origin = f"{domain_event.originator_id}:{domain_event.originator_version}"
    actor = domain_event.actor
    return {
        "event_id": str(uuid5(EVENT_NAMESPACE, origin)),
        "aggregate": aggregate,
        "aggregate_id": str(domain_event.originator_id),
        "aggregate_version": domain_event.originator_version,
        "company_id": company_id,
        "occurred_at": domain_event.timestamp,
        "actor": Actor(**actor) if actor else Actor(type="system", id=SERVICE_NAME),
        "run_id": domain_event.run_id,
        "reason": domain_event.reason,
    }


def to_contract(domain_event: Any) -> Event | None:
    """The public event of a stored gateway event, or None for a private one (sessions).

    Args:
        domain_event: A stored domain event of the gateway.

    Returns:
        ``CompanyCreated``, ``ApiKeyCreated``, ``ApiKeyRevoked``, an inbox rejection, or None.
    """
    match domain_event:
        case Company.Created():
            company_id = str(domain_event.originator_id)
            return CompanyCreated(
                **_envelope(domain_event, "company", company_id),
                name=domain_event.name,
                issue_prefix=domain_event.issue_prefix,
            )
        case ApiKey.Created():
            return ApiKeyCreated(
                **_envelope(domain_event, "api_key", domain_event.company_id),
                name=domain_event.name,
                kind=domain_event.kind,
                agent_id=domain_event.agent_id,
            )
        case ApiKey.Revoked():
            return ApiKeyRevoked(**_envelope(domain_event, "api_key", domain_event.company_id))
    return rejection_to_contract(domain_event, SERVICE_NAME)
