"""The git-credentials' read models: secrets by id and by name, and each company's access events.

Rebuilt from the notification log at start and kept current after each save
(:class:`eventstore.ServiceApplication`). They hold names, versions, dates and ids only: never a
value and never a ciphertext (the use cases load the :class:`~git_credentials.domain.Secret`
aggregate when they need one).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from contracts.credentials import CredentialSource, GitProvider
from eventstore import ServiceApplication
from git_credentials.domain import CredentialResolution, Secret

__all__ = ["AccessRecord", "CredentialsReadModels", "SecretRecord"]


@dataclass(frozen=True)
class SecretRecord:
    """A live secret as lists show it."""

    id: str
    company_id: str
    name: str
    version: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class AccessRecord:
    """One credential resolution (an access event), never the value."""

    id: str
    company_id: str
    secret_name: str | None
    source: CredentialSource
    provider: GitProvider
    run_id: str | None
    operation_id: str | None
    remote_host: str
    occurred_at: datetime


class CredentialsReadModels(ServiceApplication):
    """Projection of the stored events onto what the queries read."""

    secrets: dict[str, SecretRecord]
    """Live secrets by id."""
    secret_names: dict[tuple[str, str], str]
    """``(company id, name)`` -> id of the live secret of that name."""
    deleted_secrets: set[str]
    """Ids of deleted secrets (their data keys must not stay in the vault)."""
    access_log: dict[str, list[AccessRecord]]
    """Company id -> its access events, oldest first."""

    def init_read_models(self) -> None:
        """Empty read models (before every rebuild)."""
        self.secrets = {}
        self.secret_names = {}
        self.deleted_secrets = set()
        self.access_log = {}

    def project(self, domain_event: Any) -> None:
        """Apply one stored event to the read models (at start, and after each save)."""
        key = str(domain_event.originator_id)
        at: datetime = domain_event.timestamp
        match domain_event:
            case Secret.Created():
                self.secrets[key] = SecretRecord(
                    key, domain_event.company_id, domain_event.name, 1, at, at
                )
                self.secret_names[(domain_event.company_id, domain_event.name)] = key
            case Secret.Rotated():
                record = self.secrets[key]
                self.secrets[key] = replace(record, version=domain_event.version, updated_at=at)
            case Secret.Deleted():
                record = self.secrets.pop(key)
                if self.secret_names.get((record.company_id, record.name)) == key:
                    del self.secret_names[(record.company_id, record.name)]
                self.deleted_secrets.add(key)
            case CredentialResolution.Resolved():
                self.access_log.setdefault(domain_event.company_id, []).append(
                    AccessRecord(
                        id=key,
                        company_id=domain_event.company_id,
                        secret_name=domain_event.secret_name,
                        source=domain_event.source,
                        provider=domain_event.provider,
                        run_id=domain_event.run_id,
                        operation_id=domain_event.operation_id,
                        remote_host=domain_event.remote_host,
                        occurred_at=at,
                    )
                )

    def read_models(self) -> dict[str, object]:
        """The read models as plain data, for replay verification (no value, no ciphertext)."""
        return {
            "secrets": dict(self.secrets),
            "secret_names": {f"{c}/{n}": key for (c, n), key in self.secret_names.items()},
            "deleted_secrets": sorted(self.deleted_secrets),
            "access_log": {c: list(rows) for c, rows in self.access_log.items()},
        }
