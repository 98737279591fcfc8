"""Stored gateway events -> public contracts (the one translation point; STYLE 13).

Companies and API keys are public (without key material); sessions, run tokens and the marks of
deleted agents are private and never leave the gateway (``None``). The envelope is servicekit's,
built the same way for every service.
"""

from __future__ import annotations

from typing import Any

from api_gateway.domain import ApiKey, Company
from api_gateway.settings import SERVICE_NAME
from contracts.base import Event
from contracts.gateway import (
    ApiKeyCreated,
    ApiKeyRevoked,
    CompanyCreated,
    CompanyHostAccessChanged,
)
from eventstore import rejection_to_contract
from servicekit.publishing import envelope

__all__ = ["to_contract"]


def to_contract(domain_event: Any) -> Event | None:
    """The public event of a stored gateway event, or None for a private one (sessions, run
    tokens, deleted agents).

    Args:
        domain_event: A stored domain event of the gateway.

    Returns:
        ``CompanyCreated``, ``CompanyHostAccessChanged``, ``ApiKeyCreated``, ``ApiKeyRevoked``, an inbox rejection, or None.
    """
    match domain_event:
        case Company.Created():
            company_id = str(domain_event.originator_id)
            return CompanyCreated(
                **envelope(
                    domain_event, aggregate="company", company_id=company_id, service=SERVICE_NAME
                ),
                name=domain_event.name,
                issue_prefix=domain_event.issue_prefix,
            )
        case Company.HostAccessChanged():
            company_id = str(domain_event.originator_id)
            return CompanyHostAccessChanged(
                **envelope(
                    domain_event, aggregate="company", company_id=company_id, service=SERVICE_NAME
                ),
                host_trusted=domain_event.host_trusted,
                allowed_roots=list(domain_event.allowed_roots),
            )
        case ApiKey.Created():
            return ApiKeyCreated(
                **envelope(
                    domain_event,
                    aggregate="api_key",
                    company_id=domain_event.company_id,
                    service=SERVICE_NAME,
                ),
                name=domain_event.name,
                kind=domain_event.kind,  # type: ignore[arg-type]
                agent_id=domain_event.agent_id,
            )
        case ApiKey.Revoked():
            return ApiKeyRevoked(
                **envelope(
                    domain_event,
                    aggregate="api_key",
                    company_id=domain_event.company_id,
                    service=SERVICE_NAME,
                )
            )
    return rejection_to_contract(domain_event, SERVICE_NAME)
