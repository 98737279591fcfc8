"""The one place where the git-credentials's stored domain events become public contracts.

Public events carry names, versions and ids only: the stored events' ciphertext never leaves the
service (ARCHITECTURE §2).
"""

from __future__ import annotations

from functools import partial
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


_envelope = partial(envelope, service=SERVICE_NAME)
"""The envelope fields of a public event of this service (``aggregate``, ``company_id`` given)."""


def to_contract(domain_event: Any) -> Event | None:
    """The public event for a stored one, or ``None`` when it stays private."""
    e = domain_event
    match e:
        case Secret.Created():
            return SecretCreated(
                **_envelope(e, aggregate="secret", company_id=e.company_id), name=e.name, version=1
            )
        case Secret.Rotated():
            return SecretRotated(
                **_envelope(e, aggregate="secret", company_id=e.company_id),
                name=e.name,
                version=e.version,
            )
        case Secret.Deleted():
            return SecretDeleted(
                **_envelope(e, aggregate="secret", company_id=e.company_id),
                name=e.name,
                versions_destroyed=e.versions_destroyed,
            )
        case CredentialResolution.Resolved():
            return CredentialResolved(
                **_envelope(e, aggregate="credential", company_id=e.company_id),
                secret_name=e.secret_name,
                source=e.source,
                provider=e.provider,
                remote_host=e.remote_host,
                operation_id=e.operation_id,
            )
    return None
