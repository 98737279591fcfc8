"""The one place where the git-credentials's stored domain events become public contracts.

Public events carry names, versions and ids only: the stored events' ciphertext never leaves the
service (ARCHITECTURE §2).
"""

from __future__ import annotations

from typing import Any

from contracts.base import Event
from contracts.credential_events import (
    CredentialResolved,
    SecretCreated,
    SecretDeleted,
    SecretRotated,
)
from git_credentials.domain import CredentialResolution, Secret
from git_credentials.settings import SERVICE_NAME
from servicekit.publishing import envelope

__all__ = ["to_contract"]


def _env(domain_event: Any, aggregate: str) -> dict[str, Any]:
    fields: dict[str, Any] = envelope(
        domain_event, aggregate=aggregate, company_id=domain_event.company_id, service=SERVICE_NAME
    )
    return fields


def to_contract(domain_event: Any) -> Event | None:
    """The public event for a stored one, or ``None`` when it stays private."""
    e = domain_event
    match e:
        case Secret.Created():
            return SecretCreated(**_env(e, "secret"), name=e.name, version=1)
        case Secret.Rotated():
            return SecretRotated(**_env(e, "secret"), name=e.name, version=e.version)
        case Secret.Deleted():
            return SecretDeleted(
                **_env(e, "secret"), name=e.name, versions_destroyed=e.versions_destroyed
            )
        case CredentialResolution.Resolved():
            return CredentialResolved(
                **_env(e, "credential"),
                secret_name=e.secret_name,
                source=e.source,
                provider=e.provider,
                remote_host=e.remote_host,
                operation_id=e.operation_id,
            )
    return None
