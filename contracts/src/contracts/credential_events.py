"""Public events of company secrets and credential resolutions (owner: git-credentials).

They carry names, versions and ids only: never a value, a ciphertext or a data key.
"""

from __future__ import annotations

from contracts.base import Event
from contracts.credentials import CredentialSource, GitProvider

__all__ = ["CredentialResolved", "SecretCreated", "SecretDeleted", "SecretRotated"]


class SecretCreated(Event, tag="secret.created.v1", frozen=True, kw_only=True):
    """A company secret was created (version 1)."""

    name: str
    version: int


class SecretRotated(Event, tag="secret.rotated.v1", frozen=True, kw_only=True):
    """A new version of a secret was stored; the next resolution uses it."""

    name: str
    version: int


class SecretDeleted(Event, tag="secret.deleted.v1", frozen=True, kw_only=True):
    """A secret was deleted and the data keys of all its versions destroyed."""

    name: str
    versions_destroyed: int


class CredentialResolved(Event, tag="credential.resolved.v1", frozen=True, kw_only=True):
    """A git credential was resolved for a run (``runId`` of the envelope) or an operation."""

    secret_name: str | None
    source: CredentialSource
    provider: GitProvider
    remote_host: str
    operation_id: str | None = None
